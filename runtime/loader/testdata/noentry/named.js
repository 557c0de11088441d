export const main = () => 1;
