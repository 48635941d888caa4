#!/usr/bin/env bash
# Bad arguments: one line on stderr, nothing on stdout, a non-zero exit, and no change.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

TB=tbargs
checked=0
bad() { # ARGS...: the testbed must refuse them
  local out err rc=0
  out=$(mktemp) err=$(mktemp)
  "$TESTBED" "$@" >"$out" 2>"$err" || rc=$?
  ((rc != 0)) || fail "'testbed $*' exited 0"
  [[ ! -s $out ]] || fail "'testbed $*' printed on stdout: $(cat "$out")"
  [[ $(wc -l <"$err") == 1 ]] || fail "'testbed $*' printed $(wc -l <"$err") lines on stderr: $(cat "$err")"
  grep -q '^testbed: ' "$err" || fail "'testbed $*': message without the program name: $(cat "$err")"
  rm -f "$out" "$err"
  checked=$((checked + 1))
}

tb down >/dev/null
trap 'tb down >/dev/null 2>&1 || true' EXIT

# Before anything is up.
bad
bad frobnicate
bad --bogus status
bad --name Bad_Name status
bad --name "$TB"
bad --name "$TB" up --spines 0
bad --name "$TB" up --hosts x
bad --name "$TB" up --hosts 1
bad --name "$TB" up --planes 99
bad --name "$TB" up --mtu
bad --name "$TB" up --mtu 100
bad --name "$TB" up --rate -5
bad --name "$TB" up --seed 99999999999
bad --name "$TB" up --bogus
bad --name "$TB" down now
bad --name "$TB" impair --all --loss 1
bad --name "$TB" addr h1
bad --name "$TB" exec h1 -- true
if command -v setpriv >/dev/null; then
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$TESTBED" --name "$TB" up 2>&1) &&
    fail "'up' as an unprivileged user succeeded"
  [[ $out == "testbed: must run as root"* && $(wc -l <<<"$out") == 1 ]] || fail "'up' as a user: $out"
  checked=$((checked + 1))
fi
[[ -z $(ip netns list | grep "^$TB-" || true) ]] || fail "a refused command created namespaces"

start tbargs --hosts 3 --spines 2
t=(--name "$TB")
bad "${t[@]}" up
bad "${t[@]}" status extra
bad "${t[@]}" addr
bad "${t[@]}" addr h9
bad "${t[@]}" addr h1 4
bad "${t[@]}" addr x1
bad "${t[@]}" ns p7-s1
bad "${t[@]}" ns p0-s9
bad "${t[@]}" exec h7 -- true
bad "${t[@]}" exec h1
bad "${t[@]}" impair --loss 1
bad "${t[@]}" impair --all
bad "${t[@]}" impair --all --loss 101
bad "${t[@]}" impair --all --loss abc
bad "${t[@]}" impair --all --loss
bad "${t[@]}" impair --spine 3 --loss 1
bad "${t[@]}" impair --spine 1 --plane 1 --loss 1
bad "${t[@]}" impair --all --dir sideways --loss 1
bad "${t[@]}" impair --all --ce-rate fast
bad "${t[@]}" impair --all --mtu 10
bad "${t[@]}" impair --all --frobnicate
bad "${t[@]}" fail
bad "${t[@]}" fail spine
bad "${t[@]}" fail spine 7
bad "${t[@]}" fail spine 1 --dir up
bad "${t[@]}" fail link 1
bad "${t[@]}" fail link 1 c
bad "${t[@]}" fail plane
bad "${t[@]}" fail plane 1
bad "${t[@]}" fail plane 0 --softly
bad "${t[@]}" fail router 1
bad "${t[@]}" heal spine
bad "${t[@]}" heal spine 3
bad "${t[@]}" heal plane 5
bad "${t[@]}" heal everything
bad "${t[@]}" heal plane 0 --plane 0
bad "${t[@]}" spine-of h1 h2
bad "${t[@]}" spine-of h1 h3 40000
bad "${t[@]}" spine-of h1 h2 70000
bad "${t[@]}" spine-of h1 h2 40000 --proto sctp
bad "${t[@]}" spine-of h1 h9 40000
bad "${t[@]}" ports h1 h2
bad "${t[@]}" ports h1 h2 3
bad "${t[@]}" ports h1 h2 1 --count 0
bad "${t[@]}" counters --plane 1
bad "${t[@]}" counters --bogus

# None of that changed the fabric.
grep -A1 'impairments and failures:' <<<"$(tb status)" | grep -q '  none' || fail "a refused command changed the fabric"
ok "$checked bad invocations: one line on stderr, nothing on stdout, non-zero exit"
