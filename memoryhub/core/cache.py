"""Django's Redis cache with one redis-py client per connection pool.

Django builds a new redis.Redis for every cache call, and redis-py's constructor copies its
table of ~170 response callbacks each time: with two rate-limit buckets (a get and a set each)
that was about a millisecond of CPU per API request. A client is only a handle on its pool,
which is thread-safe, so one per pool serves every call.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class _ReusingClient(RedisCacheClient):
    # Django's client has no type hints: its private helpers are read through Any.
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        base: Any = self
        index = base._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = base._client(
                connection_pool=base._get_connection_pool(write)
            )
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _ReusingClient
