/** How much a CountedCache holds, and how long an entry may be trusted without a newer count. */
export interface CountedCacheLimits {
  accounts: number;
  entriesPerAccount: number;
  /**
   * Bounds how long an entry answers. A change is counted after its write (lib/events changeCounts), so entries
   * never miss a counted change; this only bounds one counted late: a writer that died between its write and the
   * commit of its event, until another replica settles it.
   */
  ttlMs: number;
}

interface AccountEntries<T> {
  count: number;
  until: number;
  entries: Map<string, T>;
}

/**
 * Reads of an account's records kept under the account's change count: an entry answers only while the count it
 * was read under is still the account's count, so a cached read is the read the database would answer. Bounded
 * in accounts and entries (the oldest go first).
 */
export class CountedCache<T> {
  private readonly accounts = new Map<number, AccountEntries<T>>();

  constructor(private readonly limits: CountedCacheLimits) {}

  get(accountId: number, count: number, key: string, now = Date.now()): T | undefined {
    const account = this.accounts.get(accountId);
    return account && account.count === count && account.until > now ? account.entries.get(key) : undefined;
  }

  /** Keeps `value`, read after the account's count was `count`; a read under an older count than kept is dropped. */
  set(accountId: number, count: number, key: string, value: T, now = Date.now()): void {
    let account = this.accounts.get(accountId);
    if (account && account.count > count && account.until > now) return;
    if (!account || account.count !== count || account.until <= now) {
      this.accounts.delete(accountId);
      if (this.accounts.size >= this.limits.accounts) this.accounts.delete(this.accounts.keys().next().value!);
      account = { count, until: now + this.limits.ttlMs, entries: new Map() };
      this.accounts.set(accountId, account);
    }
    // Replacing a kept key (a list re-stores the total it read from here) must not push out another entry.
    if (!account.entries.has(key) && account.entries.size >= this.limits.entriesPerAccount) account.entries.delete(account.entries.keys().next().value!);
    account.entries.set(key, value);
  }
}
