#!/usr/bin/env bash
# Builds the relay's eBPF fast path (Resources/bpf/relay_fastpath.bpf.c) into
# .build/bpf/relay_fastpath.bpf.o, where callroomd looks for it (beside its executable first).
# Needs clang and the kernel/libbpf headers (scripts/install-deps.sh installs them).
# Exits 0 without building when clang is missing and --if-possible is given.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang >/dev/null; then
    [ "${1:-}" = "--if-possible" ] && { echo "build-bpf: no clang; the relay fast path is not built" >&2; exit 0; }
    echo "build-bpf: needs clang (apt-get install clang)" >&2; exit 1
fi
mkdir -p .build/bpf
arch_include="/usr/include/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)"
clang -O2 -g -Wall -Werror -target bpf -I Sources/CBPF -I "$arch_include" \
    -c Resources/bpf/relay_fastpath.bpf.c -o .build/bpf/relay_fastpath.bpf.o.tmp
mv .build/bpf/relay_fastpath.bpf.o.tmp .build/bpf/relay_fastpath.bpf.o
