interface In {
  n: number;
}

function helper(x: In): number {
  if (x.n > 0) {
    throw new Error("bad n " + x.n);
  }
  return x.n;
}

export default function main(input: In): number {
  const out: number = helper(input);
  return out;
}
