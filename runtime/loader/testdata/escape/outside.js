export const secret = "nope";
