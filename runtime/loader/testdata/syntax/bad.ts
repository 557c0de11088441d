interface A {
  x: number;
}

export default function main(a: A) {
  const y: number = a.x +;
  return y;
}
