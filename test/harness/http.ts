/** A response as tests look at it: status, parsed JSON body (or text), headers. */
export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as-is, for malformed-body tests. */
  rawBody?: string | Buffer;
  token?: string;
  apiKey?: string;
  headers?: Record<string, string>;
}

/** A tiny HTTP client bound to one cluster; real requests over loopback, nothing mocked. */
export function apiClient(baseUrl: string) {
  return async function request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.apiKey) headers["x-auth-token"] = opts.apiKey;
    let body: string | Buffer | undefined = opts.rawBody;
    if (opts.body !== undefined) body = JSON.stringify(opts.body);
    if (body !== undefined) headers["content-type"] ??= "application/json";
    const res = await fetch(baseUrl + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get("content-type") ?? "").includes("json") && text) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, headers: res.headers };
  };
}

export type Api = ReturnType<typeof apiClient>;

let counter = 0;
/** A unique email per call, so tests never collide on the unique index. */
export function uniqueEmail(prefix = "user"): string {
  return `${prefix}-${process.pid}-${Date.now()}-${counter++}@example.com`;
}

/** Signs up a new account and returns its first user's token and id. */
export async function signup(api: Api, prefix = "owner") {
  const email = uniqueEmail(prefix);
  const res = await api("POST", "/api/v1/users/", { body: { email, password: "correct-horse-battery", full_name: prefix } });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { token: res.body.access_token as string, user: res.body, email, password: "correct-horse-battery" };
}
