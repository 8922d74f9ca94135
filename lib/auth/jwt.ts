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
}

const encoder = new TextEncoder();

/** Signs an access token for a user; `purpose` separates e.g. email-verification tokens from access tokens. */
export async function signToken(
  settings: JwtSettings,
  claims: AccessClaims,
  purpose = "access",
  ttlSeconds = settings.ttlSeconds,
): Promise<string> {
  return new SignJWT({ acc: claims.accountId, pur: purpose })
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
    if (payload.pur !== purpose || !Number.isInteger(userId) || typeof accountId !== "number") return null;
    return { userId, accountId };
  } catch (err) {
    if (err instanceof joseErrors.JOSEError || err instanceof TypeError) return null;
    throw err;
  }
}
