# Sourced by the PESQ benchmarks (bench-pesq.sh, bench-recording-pesq.sh): makes sure sox is
# installed and the `pesq` package (PyPI, with numpy) is in .build/pesq-venv; sets $venv.
#   pesq_env NAME   (NAME: the calling script, for its messages)
pesq_env() {
    local who="$1"
    if ! command -v sox >/dev/null; then
        [ "$(id -u)" -eq 0 ] || { echo "$who: needs sox (apt-get install sox)" >&2; exit 1; }
        echo "$who: installing sox" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sox >/dev/null
    fi
    venv=.build/pesq-venv
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pesq, numpy' 2>/dev/null; then
        if ! python3 -m venv "$venv" 2>/dev/null; then  # Debian's python3 keeps venv in a package
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            python3 -m venv "$venv"
        fi
        "$venv/bin/pip" install -q pesq numpy
    fi
}
