export const summarize = (task: string, total: number): string => `${task}:${total}`;
