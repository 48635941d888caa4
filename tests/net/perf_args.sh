#!/usr/bin/env bash
# Bad arguments to the tools: one line on stderr, naming the problem, and exit status 2.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
# BLASTER (bench/net's mroce-udp-blaster) is set when benchmarks are built.
[[ -z ${BLASTER:-} || -x $BLASTER ]] || fail "BLASTER ($BLASTER) is not built: build target mroce-udp-blaster"
[[ -n ${DEMO:-} && -x $DEMO ]] || fail "DEMO (${DEMO:-}) is not built: build target mroce-demo"

# refused WORD TOOL ARGS...: the tool exits 2 with exactly one line containing WORD.
refused() {
  local word=$1 status=0 err
  shift
  err=$("$@" 2>&1 >/dev/null) || status=$?
  ((status == 2)) || fail "'$*' exited $status, not 2 (stderr: $err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "'$*' printed more than one line: $err"
  [[ $err == *"$word"* ]] || fail "'$*' did not mention '$word': $err"
}

refused "subcommand" "$PERF"
refused "host" "$PERF" client
refused "--size" "$PERF" client 127.0.0.1 --size 0
refused "--test" "$PERF" client 127.0.0.1 --test atomics
refused "--addr" "$PERF" client 127.0.0.1 --addr 300.1.2.3
refused "--addr" "$PERF" server --addr nowhere
refused "--depth" "$PERF" client 127.0.0.1 --depth 0
refused "--cq-mod" "$PERF" client 127.0.0.1 --cq-mod 0
refused "--mtu" "$PERF" client 127.0.0.1 --mtu 4097
refused "--transport" "$PERF" server --transport tcp
refused "--progress" "$PERF" server --progress sometimes
refused "1024 MiB" "$PERF" client 127.0.0.1 --size 67108864 --depth 128
refused "--bogus" "$PERF" client 127.0.0.1 --bogus
refused "--port" "$PERF" server --port 70000
refused "--duration" "$PERF" client 127.0.0.1 --duration -1
# Numbers are checked as written, with the line every setting out of range gets.
refused "--duration=nan: must be 0.01..86400" "$PERF" client 127.0.0.1 -D nan
refused "--interval=inf: must be" "$PERF" client 127.0.0.1 --interval inf
refused "--paths=0: must be 1..256" "$PERF" client 127.0.0.1 --paths 0
refused "--paths=-1: must be 1..256" "$PERF" client 127.0.0.1 --paths -1
refused "--mtu=70000: must be 256..16384" "$PERF" client 127.0.0.1 --mtu 70000
refused "--iters=oops: must be" "$PERF" client 127.0.0.1 --iters oops
refused "--rate=99999999999999999999: must be" "$PERF" server --rate 99999999999999999999
refused "--src-ports=0: must be 1..4096" "$PERF" server --src-ports 0
if [[ -n ${BLASTER:-} ]]; then
  refused "--gso" "$BLASTER" bw --gso 0
  refused "IPv4" "$BLASTER" lat --addr not-an-ip
fi
# mroce-demo too (CLI11's own codes were 105 and 109).
refused "--paths" "$DEMO" --paths 0
refused "--bogus" "$DEMO" --bogus
refused "--loss" "$DEMO" --loss nan
refused "--gbps" "$DEMO" --gbps oops
ok "bad arguments give one line and exit 2"

help=$("$PERF" --help) || fail "--help exited non-zero"
grep -q "mroce-perf server" <<<"$help" || fail "--help does not describe the roles"
"$PERF" client --help >/dev/null || fail "client --help failed"
ok "--help exits 0"

# A run that cannot work (no server) fails with one line and a non-zero exit.
status=0
err=$(timeout 30 "$PERF" client 127.0.0.1 --tcp-port "$(free_tcp_port)" 2>&1 >/dev/null) || status=$?
((status != 0)) || fail "a client without a server succeeded"
[[ $(wc -l <<<"$err") -eq 1 && $err == *"no server"* ]] || fail "no-server message: $err"
ok "no server: one line, exit $status"
