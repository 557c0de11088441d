export const prefix = "hi ";
