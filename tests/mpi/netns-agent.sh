#!/bin/sh
# mpirun's remote shell (plm_rsh_agent) for the namespace testbed: the "host" mpirun names
# is a network namespace, and the command runs there.
ns=$1
shift
exec ip netns exec "$ns" sh -c "$*"
