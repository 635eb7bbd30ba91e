# Sourced by the suite benchmarks.

# Prints "SUITE MODEL FILE" for every bundled synthetic kernel, with the GPU model its suite
# runs on.
suite_kernels() {
  local pair dir f
  for pair in warped-slicer:fermi-ws punyala:gpgpusim-60sm ugpu:ugpu-80sm-hbm slate:titanxp \
      sim:k40c examples:qv100; do
    dir=${pair%%:*}
    for f in traces/"$dir"/*.toml; do
      # (suite.toml lists a suite; card.toml is its workload card, not a kernel)
      case "$(basename "$f")" in suite.toml | card.toml) ;; *) echo "$dir ${pair#*:} $f" ;; esac
    done
  done
}

# First occurrence of counter $1 in the run JSON $2 (the first application's).
counter() { grep -o "\"$1\": [0-9]*" "$2" | head -1 | awk '{print $2}'; }
