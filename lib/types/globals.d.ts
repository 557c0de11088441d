// The globals a workflow has besides the language's own: console, whose lines go to the run's
// log. Timers (setTimeout, setInterval, …) are not declared: a workflow cannot use them, since
// their timing cannot be replayed. Written by `crw types`.
interface Console {
  log(...values: unknown[]): void;
  info(...values: unknown[]): void;
  warn(...values: unknown[]): void;
  error(...values: unknown[]): void;
  debug(...values: unknown[]): void;
}
declare var console: Console;
