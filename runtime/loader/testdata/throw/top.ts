type Config = { ready: boolean };

const config: Config = { ready: false };
if (!config.ready) {
  throw new TypeError("not ready");
}

export default function main() {}
