import { retryAfterSeconds } from "../../../lib/auth/throttle";
import { actorOf, managesUsers, userCreateRefusal, userUpdateRefusal } from "../../../services/users/rules";
import { keyCreator, permissionGrantRefusal, privilegedKeyRefusal } from "../../../services/api-keys/rules";

const owner = actorOf({ authType: "jwt", userId: 1, role: "owner" });
const admin = actorOf({ authType: "jwt", userId: 2, role: "admin" });
const member = actorOf({ authType: "jwt", userId: 3, role: "member" });
const plainKey = actorOf({ authType: "api_key", apiKeyId: 9, permissions: [] });
const managingKey = actorOf({ authType: "api_key", apiKeyId: 9, permissions: ["users:manage"] });

describe("who manages users", () => {
  it("owners, admins, the operator and users:manage keys; not members or plain keys", () => {
    expect([owner, admin, actorOf({ authType: "master" }), managingKey].every(managesUsers)).toBe(true);
    expect([member, plainKey].some(managesUsers)).toBe(false);
    expect(actorOf({ authType: "jwt", userId: 4 })).toEqual({ kind: "user", userId: 4, role: "member" });
  });

  it("adding users: members need an admin; owners and admins need an owner", () => {
    expect(userCreateRefusal(plainKey, "member")).toMatch(/users:manage/);
    expect(userCreateRefusal(member, "member")).toMatch(/owners and admins/);
    expect(userCreateRefusal(admin, "member")).toBeNull();
    expect(userCreateRefusal(admin, "admin")).toMatch(/owners/);
    expect(userCreateRefusal(owner, "admin")).toBeNull();
  });

  it("updates: self for the profile only; others by admins; owners and roles by owners", () => {
    expect(userUpdateRefusal(member, { _id: 3, role: "member" }, {})).toBeNull();
    expect(userUpdateRefusal(member, { _id: 3, role: "member" }, { role: "owner" })).not.toBeNull();
    expect(userUpdateRefusal(owner, { _id: 1, role: "owner" }, { is_active: false })).not.toBeNull();
    expect(userUpdateRefusal(member, { _id: 1, role: "owner" }, {})).not.toBeNull();
    expect(userUpdateRefusal(admin, { _id: 3, role: "member" }, { is_active: false })).toBeNull();
    expect(userUpdateRefusal(admin, { _id: 1, role: "owner" }, {})).not.toBeNull();
    expect(userUpdateRefusal(admin, { _id: 3, role: "member" }, { role: "admin" })).not.toBeNull();
    expect(userUpdateRefusal(owner, { _id: 2, role: "admin" }, { role: "member" })).toBeNull();
  });

  it("a users:manage key changes members only (issue 25, item 5)", () => {
    expect(userUpdateRefusal(managingKey, { _id: 3, role: "member" }, { is_active: false })).toBeNull();
    expect(userUpdateRefusal(managingKey, { _id: 2, role: "admin" }, {})).toMatch(/members only/);
    expect(userUpdateRefusal(managingKey, { _id: 1, role: "owner" }, {})).toMatch(/members only/);
  });

  it("key permissions are granted by owners, admins and the operator only", () => {
    expect(permissionGrantRefusal({ authType: "api_key" }, ["users:manage"])).not.toBeNull();
    expect(permissionGrantRefusal({ authType: "jwt", role: "member" }, ["users:manage"])).not.toBeNull();
    expect(permissionGrantRefusal({ authType: "jwt", role: "admin" }, ["users:manage"])).toBeNull();
    expect(permissionGrantRefusal({ authType: "api_key" }, [])).toBeNull();
  });

  it("keys holding permissions are changed and deleted only by who may grant them; plain keys by anyone", () => {
    const privileged = { permissions: ["users:manage" as const] };
    expect(privilegedKeyRefusal({ authType: "jwt", role: "member" }, privileged)).toMatch(/users:manage/);
    expect(privilegedKeyRefusal({ authType: "api_key" }, privileged)).not.toBeNull();
    expect(privilegedKeyRefusal({ authType: "jwt", role: "admin" }, privileged)).toBeNull();
    expect(privilegedKeyRefusal({ authType: "master" }, privileged)).toBeNull();
    expect(privilegedKeyRefusal({ authType: "api_key" }, { permissions: [] })).toBeNull();
  });

  it("a key made with a key is answerable to that key's person", () => {
    expect(keyCreator({ userId: 3 }, null)).toEqual({ created_by_user_id: 3, created_by_api_key_id: null });
    expect(keyCreator({ apiKeyId: 9 }, { created_by_user_id: 3 })).toEqual({ created_by_user_id: 3, created_by_api_key_id: 9 });
    expect(keyCreator({}, null)).toEqual({ created_by_user_id: null, created_by_api_key_id: null });
  });
});

describe("failure throttle", () => {
  const limit = { max: 3, windowSeconds: 60 };
  it("waits until the latest exhausted window ends; live windows under the limit and ended ones do not count", () => {
    const now = 1_000_000;
    const counters = [
      { _id: "login:a", failures: 3, window_ends: new Date(now + 10_500) },
      { _id: "client:x", failures: 2, window_ends: new Date(now + 50_000) },
      { _id: "login:b", failures: 9, window_ends: new Date(now - 1) },
    ];
    expect(retryAfterSeconds(counters, [{ key: "login:a", limit }, { key: "client:x", limit }], now)).toBe(11);
    expect(retryAfterSeconds(counters, [{ key: "client:x", limit }, { key: "login:b", limit }], now)).toBe(0);
  });
});
