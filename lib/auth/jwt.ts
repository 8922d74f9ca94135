import { SignJWT, jwtVerify, errors as joseErrors } from "jose";

/** Only HS256 is accepted: alg=none and every other algorithm are refused by the verifier. */
const ALGORITHM = "HS256";

export interface JwtSettings {
  secret: string;
  issuer: string;
  audience: string;
  ttlSeconds: number;
}

/** Claims the platform puts in an access token. */
export interface AccessClaims {
  userId: number;
  accountId: number;
  /** The user's token_version when the token was issued; a higher stored version ends the token. */
  tokenVersion?: number;
}

const encoder = new TextEncoder();

/** Signs an access token for a user; `purpose` separates e.g. email-verification tokens from access tokens. */
export async function signToken(
  settings: JwtSettings,
  claims: AccessClaims,
  purpose = "access",
  ttlSeconds = settings.ttlSeconds,
): Promise<string> {
  return new SignJWT({ acc: claims.accountId, pur: purpose, ver: claims.tokenVersion ?? 0 })
    .setProtectedHeader({ alg: ALGORITHM, typ: "JWT" })
    .setSubject(String(claims.userId))
    .setIssuer(settings.issuer)
    .setAudience(settings.audience)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(encoder.encode(settings.secret));
}

/** Verifies signature, alg, exp, iss, aud and purpose; returns null for any invalid token (callers answer 401). */
export async function verifyToken(settings: JwtSettings, token: string, purpose = "access"): Promise<AccessClaims | null> {
  try {
    const { payload } = await jwtVerify(token, encoder.encode(settings.secret), {
      algorithms: [ALGORITHM],
      issuer: settings.issuer,
      audience: settings.audience,
      requiredClaims: ["exp", "sub"],
    });
    const userId = Number(payload.sub);
    const accountId = payload.acc;
    // Tokens issued before token versions existed carry none: version 0, the version every user starts with.
    const tokenVersion = payload.ver ?? 0;
    if (payload.pur !== purpose || !Number.isInteger(userId) || typeof accountId !== "number" || typeof tokenVersion !== "number") return null;
    return { userId, accountId, tokenVersion };
  } catch (err) {
    if (err instanceof joseErrors.JOSEError || err instanceof TypeError) return null;
    throw err;
  }
}

/** Verified tokens kept in memory at most this long, and at most this many. */
const CACHE_TTL_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;

/**
 * A verifier that remembers tokens it has verified (until their expiry, at most a minute): the gateway sees
 * the same token on every request of a session, and an HMAC check per request is most of its CPU per call.
 * Only successful verifications are kept, keyed by the exact token string.
 */
export function cachedVerifier(settings: JwtSettings): (token: string) => Promise<AccessClaims | null> {
  const cache = new Map<string, { claims: AccessClaims; until: number }>();
  return async (token) => {
    const now = Date.now();
    const hit = cache.get(token);
    if (hit && hit.until > now) return hit.claims;
    if (hit) cache.delete(token);
    const claims = await verifyToken(settings, token);
    if (claims) {
      if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      const exp = decodeExpiry(token);
      cache.set(token, { claims, until: Math.min(now + CACHE_TTL_MS, exp) });
    }
    return claims;
  };
}

/** The exp claim (ms) of a token that has already been verified. */
function decodeExpiry(token: string): number {
  const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as { exp?: number };
  return (payload.exp ?? 0) * 1000;
}
