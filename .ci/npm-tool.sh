# npm_tool NAME PACKAGE VERSION BIN WANT: installs PACKAGE@VERSION into <repo>/.tools/NAME (never
# globally) unless `BIN --version` there prints WANT already, and prints the binary's path.
# Sourced by the install-*.sh scripts, which run from the repository's root.
npm_tool() {
  local name=$1 package=$2 version=$3 bin=$4 want=$5
  local prefix="$PWD/.tools/$name"
  local path="$prefix/node_modules/.bin/$bin"
  installed() { [ -x "$path" ] && [ "$("$path" --version 2>/dev/null)" = "$want" ]; }
  if ! installed; then
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$package@$version" >&2
    if ! installed; then
      echo "install $name: $path is not $package $version after npm install" >&2
      exit 1
    fi
  fi
  echo "$path"
}
