export const double = (n) => n * 2;
export let label = "helper";
