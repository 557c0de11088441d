export interface Step {
  weight: number;
}
