/**
 * The least-squares slope of `points` ([x, y] pairs): how much y grows per unit of x along the
 * straight line that fits them best. Used for memory over time, where the first and last
 * readings alone would be at the mercy of one garbage collection.
 */
export function linearSlope(points: readonly (readonly [number, number])[]): number {
  if (points.length < 2) return 0;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / points.length;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / points.length;
  let covariance = 0;
  let variance = 0;
  for (const [x, y] of points) {
    covariance += (x - meanX) * (y - meanY);
    variance += (x - meanX) ** 2;
  }
  return variance === 0 ? 0 : covariance / variance;
}
