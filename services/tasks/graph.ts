/** Neighbours of a set of tasks (their parents, or their dependencies), read in one query per step. */
export type Neighbours = (ids: number[]) => Promise<number[]>;

/** Tasks a search visits at most: a longer chain is treated as reaching the target, so a write is refused, never looped on. */
export const MAX_VISITED = 10_000;

/**
 * Whether `target` can be reached from `start` by following edges, breadth first with each task visited once
 * (so links that already form a cycle cannot loop the search). Used to refuse a parent or dependency that would
 * close a cycle: linking A to B closes one exactly when A is reachable from B.
 */
export async function reaches(start: number, target: number, neighbours: Neighbours): Promise<boolean> {
  const seen = new Set([start]);
  let frontier = [start];
  while (frontier.length) {
    if (frontier.includes(target)) return true;
    if (seen.size > MAX_VISITED) return true;
    const next = (await neighbours(frontier)).filter((id) => !seen.has(id));
    for (const id of next) seen.add(id);
    frontier = [...new Set(next)];
  }
  return false;
}
