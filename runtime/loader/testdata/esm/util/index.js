export function fmt(o) {
  return Object.keys(o).sort().join(",");
}
