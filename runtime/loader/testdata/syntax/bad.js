export default function main() {
  let x = {
    a: 1
    b: 2
  };
  return x;
}
