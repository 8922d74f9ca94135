"""schemathesis hooks for scripts/fuzz/schemathesis.sh (loaded through SCHEMATHESIS_HOOKS)."""
import uuid

import schemathesis


@schemathesis.hook
def before_call(context, case, kwargs):
    # A generated Idempotency-Key is a short string that recurs across scenarios and workers (they share a seed). The
    # platform replays the first answer to a key with the same request, as Stripe does, even after that record was
    # deleted, which schemathesis reports as "created resource not found". A client sends a fresh key per operation:
    # so does the fuzzer. Keys outside 1..255 characters stay as generated, to keep their 422 exercised.
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key" and isinstance(headers[name], str) and 1 <= len(headers[name]) <= 255:
            headers[name] = uuid.uuid4().hex
