# bash completion for memprof(1): subcommands, their options, and the values
# of the options that take a word.
_memprof()
{
    local cur prev words cword
    _init_completion || return

    local commands="run attach threads top collapse flamegraph diff merge proto timeline groups symbols imports symbolize heap-table name-sites safe-point keep crash-helper core"
    if [[ $cword -eq 1 ]]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi

    case ${words[1]} in
    run)
        # After the command to run, complete as for that command.
        local i
        for ((i = 2; i < cword; i++)); do
            if [[ ${words[i]} == -- ]]; then
                _command_offset $((i + 1))
                return
            fi
            if [[ ${words[i]} != -* && ${words[i - 1]} != @(-o|--output|--pprof|--pprof-proto|--timeline|--dump|--hook|--wrapper|--on-signal|--peak-report|--serve|--site|--frames|--sample|--sample-bytes|--sort|--top|--filter|--group|--strings) ]]; then
                _command_offset $i
                return
            fi
        done
        case $prev in
        -o | --output | --pprof | --pprof-proto | --timeline | --dump | --peak-report) _filedir; return ;;
        --site) COMPREPLY=($(compgen -W "nearest user" -- "$cur")); return ;;
        --sort) COMPREPLY=($(compgen -W "count retained bytes allocated" -- "$cur")); return ;;
        --group) COMPREPLY=($(compgen -W "gem file location class" -- "$cur")); return ;;
        --hook | --wrapper | --on-signal | --serve | --frames | --sample | --sample-bytes | --top | --filter | --strings) return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "-o --output --heap --at-peak --timeline --by-thread --wrapper --on-signal --peak-report --pprof --pprof-proto --dump --hook --serve --site --frames
                --sample --sample-bytes --bytes --sort --top --filter --allocated --no-gc --group --strings --help --" -- "$cur"))
        else
            COMPREPLY=($(compgen -c -- "$cur"))
        fi
        ;;
    attach)
        case $prev in
        -o) _filedir; return ;;
        --seconds | --sample-bytes) return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--seconds -o --ruby --heap --all --sample-bytes" -- "$cur"))
        else
            _pids
        fi
        ;;
    threads)
        if [[ $prev == -p ]]; then
            _pids
        else
            COMPREPLY=($(compgen -W "-p" -- "$cur"))
        fi
        ;;
    groups)
        case $prev in
        --group) COMPREPLY=($(compgen -W "gem file location class" -- "$cur")); return ;;
        --strings | --top) return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--group --strings --top" -- "$cur"))
        else
            _filedir
        fi
        ;;
    top)
        case $prev in
        --sort) COMPREPLY=($(compgen -W "bytes count growth" -- "$cur")); return ;;
        --interval | --rows | --iterations | -n | --filter) return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--interval --rows --batch --iterations --sort --filter --help" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(pgrep -d ' ' -u "$(id -u)" .)" -- "$cur"))
        fi
        ;;
    collapse | flamegraph | diff | merge | proto | timeline)
        case $prev in
        -o) _filedir; return ;;
        --title) return ;;
        --format) COMPREPLY=($(compgen -W "collapsed speedscope" -- "$cur")); return ;;
        esac
        if [[ $cur == -* ]]; then
            local opts="-o"
            [[ ${words[1]} == @(collapse|flamegraph) ]] && opts="$opts --count --bytes"
            [[ ${words[1]} == flamegraph ]] && opts="$opts --title"
            [[ ${words[1]} == collapse ]] && opts="$opts --format"
            COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        else
            _filedir
        fi
        ;;
    core)
        case $prev in
        --dump | --pprof | --pprof-proto) _filedir; return ;;
        --sysroot) _filedir -d; return ;;
        --top | --filter | --where) return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--ruby --heap --threads --status --bytes --top --filter --dump --pprof --pprof-proto --where --sysroot" -- "$cur"))
        else
            _filedir
        fi
        ;;
    symbols | imports)
        case $prev in
        --arch)
            COMPREPLY=($(compgen -W "x86_64 arm64" -- "$cur"))
            return
            ;;
        --format)
            COMPREPLY=($(compgen -W "text tsv json" -- "$cur"))
            return
            ;;
        esac
        if [[ $cur == -* ]]; then
            if [[ ${words[1]} == symbols ]]; then
                COMPREPLY=($(compgen -W "--all --arch" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "--arch --format" -- "$cur"))
            fi
        else
            _filedir
        fi
        ;;
    symbolize)
        [[ $cword -eq 2 ]] && _filedir
        ;;
    heap-table)
        case $prev in
        --top | --filter) return ;;
        --sysroot) _filedir -d; return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--top --filter --sysroot -" -- "$cur"))
        else
            _filedir
        fi
        ;;
    esac
} &&
    complete -F _memprof memprof
