# Sourced by the shell scripts that print their header as --help (common.sh sources it too), before anything that
# could fail without a JDK or a build:
#   panamax_usage FILE   prints FILE's usage, which is its header: the comment block after the #! line, each line
#                        without its leading "# " (so a longer header needs no line range kept in step)
panamax_usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$1"; }
