import { charBoundary, charCount, clipChars, wellFormed } from "../../lib/text";

describe("text in characters (code points)", () => {
  it("counts an emoji as one character and a lone surrogate as one, as JSON Schema does", () => {
    expect(charCount("")).toBe(0);
    expect(charCount("abc")).toBe(3);
    expect(charCount("a😀b")).toBe(3);
    expect(charCount("😀".repeat(200))).toBe(200);
    expect(charCount("\uD83D")).toBe(1);
    expect(charCount("\uDE00\uD83D")).toBe(2);
  });

  it("moves a cut inside a surrogate pair back before it, and leaves every other cut", () => {
    const text = "a😀b";
    expect([0, 1, 2, 3, 4].map((i) => charBoundary(text, i))).toEqual([0, 1, 1, 3, 4]);
    expect(charBoundary("\uDE00x", 1)).toBe(1);
  });

  it("clips to whole characters", () => {
    expect(clipChars("abc", 5)).toBe("abc");
    expect(clipChars("😀😀😀", 2)).toBe("😀😀");
    expect(clipChars("a😀😀", 2)).toBe("a😀");
    expect(clipChars("\uD83Da😀", 2)).toBe("\uD83Da");
    for (let max = 0; max < 8; max++) expect(wellFormed(clipChars("x😀".repeat(5), max))).toBe(true);
  });
});
