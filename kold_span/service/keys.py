"""API keys: who may call the scoring routes, how many requests a second, how many comments a day.

`--api-keys FILE` holds one key a line as `NAME SHA256`: a name (for logs and metrics) and the
SHA-256 of the key in hex (`printf %s "$KEY" | sha256sum` prints it), so the file gives no key away.
A request presents its key as `Authorization: Bearer KEY`, `X-API-Key: KEY` or `?key=KEY`
(Perspective's clients send the last). The presented key is hashed and compared with every stored
hash by `hmac.compare_digest`, without stopping at a match, so the time taken says nothing of which
key came close. No key is a 401, an unknown one a 403; keys are never logged, names are. Each refusal says which
in its error's `details` (`errorType`), so a client tells a spent key from a busy service.

Each key's request rate (`--rate-limit`, e.g. `20/second`, a moving window) and comments a day
(`--daily-quota`, a fixed window of a day from the key's first request) are counted by the `limits` package; past
either, a 429 with `Retry-After` in whole seconds. The rate counts every request presented; the quota only the
comments of requests answered (checked before a request runs, charged after it succeeded), so a refusal or a
failure costs none. `Access` is what the routes ask: a request's key, its quota checked and its comments charged,
each refusal counted in the metrics.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from limits import RateLimitItem, RateLimitItemPerDay, parse
from limits.storage import MemoryStorage
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from starlette.requests import Request

from kold_span.config.limits import CONFIG_BYTES, read_bounded
from kold_span.errors import ConfigError, RequestError, Throttled
from kold_span.service.prometheus import ServiceMetrics
from kold_span.service.middleware import KEY_NAME

DIGEST = re.compile(r"[0-9a-f]{64}")
NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")


@dataclass(frozen=True)
class ApiKey:
    """A key's name and the SHA-256 of the key."""

    name: str
    digest: bytes


def load_keys(path: Union[str, Path]) -> list[ApiKey]:
    """An `--api-keys` file: `NAME SHA256` a line; `#` starts a comment. Errors name the file and line."""
    keys: list[ApiKey] = []
    path = Path(path)
    try:
        lines = read_bounded(path, CONFIG_BYTES, ConfigError).decode("utf-8").splitlines()
    except (OSError, UnicodeError) as err:
        raise ConfigError(f"{path}: cannot read the API key file ({err})") from None
    for number, line in enumerate(lines, 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        where = f"{path}:{number}"
        if len(fields) != 2:
            raise ConfigError(f"{where}: expected 'NAME SHA256' (2 fields), got {len(fields)}")
        name, digest = fields
        if not NAME.fullmatch(name):
            raise ConfigError(f"{where}: name {name[:40]!r}: use letters, digits and _.@- (at most 64)")
        if not DIGEST.fullmatch(digest.lower()):
            raise ConfigError(f"{where}: {name}: expected the key's SHA-256 as 64 hex digits "
                              "(printf %s KEY | sha256sum prints it), not the key itself")
        if any(k.name == name for k in keys):
            raise ConfigError(f"{where}: name {name!r} appears twice")
        keys.append(ApiKey(name, bytes.fromhex(digest)))
    if not keys:
        raise ConfigError(f"{path}: no keys; write one 'NAME SHA256' a line")
    return keys


class KeyRing:
    """The keys, and each one's rate and quota counters.

    Example:
        >>> ring = KeyRing([ApiKey("team-a", hashlib.sha256(b"s3cret").digest())], rate="2/minute")
        >>> ring.identify("s3cret").name
        'team-a'
        >>> ring.identify("guess").name
        Traceback (most recent call last):
        ...
        kold_span.errors.RequestError: the API key is not valid
    """

    def __init__(self, keys: list[ApiKey], rate: Optional[str] = None, daily_quota: Optional[int] = None):
        self.keys = keys
        self.rate: Optional[RateLimitItem] = parse(rate) if rate else None
        self.quota: Optional[RateLimitItem] = RateLimitItemPerDay(daily_quota) if daily_quota else None
        storage = MemoryStorage()
        self._moving = MovingWindowRateLimiter(storage)
        self._fixed = FixedWindowRateLimiter(storage)

    def identify(self, presented: Optional[str]) -> ApiKey:
        """The key presented, or a 401 (none) or 403 (no such key)."""
        if not presented:
            raise RequestError(401, "no API key: send it as 'Authorization: Bearer KEY', 'X-API-Key: KEY' "
                                    "or ?key=KEY", "key", [{"errorType": "API_KEY_MISSING"}])
        digest = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
        found = None
        for key in self.keys:  # every key compared, in constant time each
            if hmac.compare_digest(key.digest, digest):
                found = key
        if found is None:
            raise RequestError(403, "the API key is not valid", "key", [{"errorType": "API_KEY_INVALID"}])
        return found

    def admit(self, key: ApiKey) -> None:
        """Count one request of `key` against its rate; 429 past it."""
        if self.rate is not None and not self._moving.hit(self.rate, "rate", key.name):
            raise Throttled(f"key {key.name}: over its rate of {self.rate} (--rate-limit)", "key",
                            self._wait(self._moving, self.rate, key.name, "rate"), "RATE_LIMIT_EXCEEDED")

    def check_quota(self, key: ApiKey, comments: int) -> None:
        """429 when `comments` more would pass the key's daily quota; nothing is counted."""
        if self.quota is None:
            return
        if not self._fixed.test(self.quota, "quota", key.name, cost=comments):
            left = self._fixed.get_window_stats(self.quota, "quota", key.name).remaining
            raise Throttled(f"key {key.name}: {comments} comments, {left} left of its {self.quota.amount} a day "
                            "(--daily-quota)", "key", self._wait(self._fixed, self.quota, key.name, "quota"),
                            "QUOTA_EXCEEDED")

    def charge(self, key: ApiKey, comments: int) -> None:
        """Count `comments` answered against the key's daily quota (after `check_quota` let them in)."""
        if self.quota is not None:
            self._fixed.hit(self.quota, "quota", key.name, cost=comments)

    def describe(self) -> dict[str, Optional[str]]:
        """What `/info` shows: the rate and quota (never the keys or their names)."""
        return {"keys": str(len(self.keys)), "rate_limit": str(self.rate) if self.rate else None,
                "daily_quota": str(self.quota.amount) if self.quota else None}

    @staticmethod
    def _wait(limiter: object, item: RateLimitItem, name: str, kind: str) -> int:
        reset = limiter.get_window_stats(item, kind, name).reset_time  # type: ignore[attr-defined]
        return max(1, math.ceil(reset - time.time()))


class Access:
    """A request's key checked and its comments charged, each refusal counted in the metrics (no ring: open)."""

    def __init__(self, ring: Optional[KeyRing], metrics: ServiceMetrics):
        self.ring, self.metrics = ring, metrics

    def authorize(self, request: Request) -> Optional[ApiKey]:
        """The caller's API key (None when the service has no keys); 401, 403 or 429 otherwise."""
        if self.ring is None:
            return None
        header = request.headers.get("authorization", "")
        presented = (header[7:].strip() if header[:7].lower() == "bearer " else None) \
            or request.headers.get("x-api-key") or request.query_params.get("key")
        try:
            key = self.ring.identify(presented)
        except RequestError as err:
            self.metrics.rejected("unauthenticated" if err.status == 401 else "forbidden")
            raise
        request.scope[KEY_NAME] = key.name
        try:
            self.ring.admit(key)
        except Throttled:
            self.metrics.rejected("rate_limited")
            self.metrics.keyed(key.name, 429)
            raise
        return key

    def check_quota(self, key: Optional[ApiKey], comments: int) -> None:
        """429 when a request's comments would pass its key's daily quota (before any of them runs)."""
        if key is None or self.ring is None:
            return
        try:
            self.ring.check_quota(key, comments)
        except Throttled:
            self.metrics.rejected("quota")
            self.metrics.keyed(key.name, 429)
            raise

    def charge(self, key: Optional[ApiKey], comments: int) -> None:
        """Count an answered request's comments against its key's daily quota: a refusal or failure costs nothing."""
        if key is None or self.ring is None:
            return
        self.ring.charge(key, comments)
        self.metrics.keyed(key.name, 200, comments)
