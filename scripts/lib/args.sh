# The command-line conventions of every program in the repository
# (docs/architecture.md, "Command lines"), for the scripts: sourced before a
# script reads its arguments,
#   . "$(dirname "$0")/lib/args.sh"
#   args_help "$@"
#   args_positional 2 "$@"
#
# args_usage            prints the script's header comment (line 2 up to
#                       the first line that is not a comment): its usage
# args_help ARG...      --help or -h among the arguments: the usage on
#                       stdout, exit status 0
# args_die MESSAGE      "NAME: MESSAGE", then the usage, on stderr; exit 2
# args_positional MAX ARG...
#                       for a script that takes no flags: an argument that
#                       starts with '-' is an unknown option, and more than
#                       MAX arguments are too many (args_die)
# (scripts/gpu-run.sh travels alone to the GPU machine and keeps its own
# copy of these few lines.)

args_usage() {
  awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"
}

args_help() {
  local arg
  for arg in "$@"; do
    case $arg in
      -h|--help) args_usage; exit 0 ;;
    esac
  done
}

args_die() {
  local name
  name=$(basename "$0" .sh)
  { echo "$name: $1"; echo; args_usage; } >&2
  exit 2
}

args_positional() {
  local max=$1 arg
  shift
  for arg in "$@"; do
    case $arg in
      -*) args_die "unknown option $arg" ;;
    esac
  done
  (($# <= max)) || args_die "at most $max arguments, got $#: $*"
}
