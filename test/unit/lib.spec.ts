import { firstFreeIdentifier, slugify } from "../../lib/ids";
import { paginationParams, toPage, toSort } from "../../lib/pagination";
import { normalizeEmail, registrationEvent, selfDeleteRefusal, userChanges, verificationLink } from "../../services/users/rules";

describe("identifiers", () => {
  it.each([
    ["Support Bot", "support-bot"],
    ["  Ünïcödé  Names!! ", "unicode-names"],
    ["***", "item"],
    ["a".repeat(200), "a".repeat(80)],
    // Other scripts are romanised; emoji and punctuation separate words as before.
    ["Агент один", "agent-odin"],
    ["客服机器人", "ke-fu-ji-qi-ren"],
    ["Ελληνικά", "ellinika"],
    ["🤖 Support Bot", "support-bot"],
    ["Bob’s bot — v2", "bob-s-bot-v2"],
    ["😀😀", "item"],
    // A name of only digits would give an identifier that reads as an id in a path.
    ["7", "item-7"],
    ["2024 / 25", "item-2024-25"],
    ["Team 7", "team-7"],
  ])("slugify(%j) = %j", (name, slug) => expect(slugify(name)).toBe(slug));

  it("picks the first free suffix", () => {
    expect(firstFreeIdentifier("bot", [])).toBe("bot");
    expect(firstFreeIdentifier("bot", ["bot", "bot-2"])).toBe("bot-3");
  });
});

describe("pagination", () => {
  it("reports has_more from skip, page size and total", () => {
    expect(toPage([1, 2], 5, 0, 2).pagination).toEqual({ total: 5, skip: 0, limit: 2, has_more: true });
    expect(toPage([5], 5, 4, 2).pagination.has_more).toBe(false);
    expect(toPage([], 0, 0, 50)).toEqual({ data: [], pagination: { total: 0, skip: 0, limit: 50, has_more: false } });
  });

  it("declares the spec's bounds", () => {
    expect(paginationParams({ max: 200, def: 50 }).limit).toMatchObject({ min: 1, max: 200, default: 50 });
    expect(paginationParams({ def: 100 }).limit).not.toHaveProperty("max");
    expect(toSort("name", "asc")).toEqual({ name: 1, _id: 1 });
  });
});

describe("user rules", () => {
  it("normalises emails and only lets profile fields change", () => {
    expect(normalizeEmail("  Ada@Example.COM ")).toBe("ada@example.com");
    expect(userChanges({ email: "A@B.co", full_name: null })).toEqual({ email: "a@b.co", full_name: null });
    expect(userChanges({ account_id: 5, password_hash: "x" } as never)).toEqual({});
  });

  it("keeps an account's last active owner while other users remain", () => {
    expect(selfDeleteRefusal("owner", { users: 2, activeOwners: 0 })).toMatch(/last owner/);
    expect(selfDeleteRefusal("owner", { users: 2, activeOwners: 1 })).toBeNull();
    expect(selfDeleteRefusal("owner", { users: 0, activeOwners: 0 })).toBeNull();
    expect(selfDeleteRefusal("admin", { users: 3, activeOwners: 0 })).toBeNull();
  });

  it("builds the user.registered event with the verification link", () => {
    const now = new Date();
    const link = verificationLink("https://app.example.com/", "t.o.k");
    expect(link).toBe("https://app.example.com/api/v1/users/verify-email?token=t.o.k");
    expect(registrationEvent({ id: 1, account_id: 2, email: "a@b.co", locale: "fr" }, link, now)).toEqual({
      event: "user.registered",
      payload: { user_id: 1, account_id: 2, email: "a@b.co", locale: "fr", verification_url: link },
      created_at: now,
    });
  });
});
