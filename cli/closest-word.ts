/**
 * The candidate a mistyped word most likely meant: the nearest by edit distance, where swapping
 * two neighbouring letters counts as one edit (`lsit` → `list`), and only when it is near enough
 * to be a typo (one edit in words of up to five letters, a third of the letters in longer ones).
 */
export function closestWord(typed: string, candidates: Iterable<string>): string | undefined {
  const allowed = Math.max(1, Math.floor(typed.length / 3));
  let best: { word: string; distance: number } | undefined;
  for (const word of candidates) {
    const distance = editDistance(typed.toLowerCase(), word.toLowerCase());
    if (distance <= allowed && (!best || distance < best.distance)) best = { word, distance };
  }
  return best?.word;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(
        rows[i - 1]![j]! + 1,
        rows[i]![j - 1]! + 1,
        rows[i - 1]![j - 1]! + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, rows[i - 2]![j - 2]! + 1);
      }
      rows[i]![j] = distance;
    }
  }
  return rows[a.length]![b.length]!;
}
