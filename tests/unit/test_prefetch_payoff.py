"""Prefetching the panel's rankings stops paying when synonyms outdate them before anyone reads them: it then
only probes, and comes back once the probes are read again."""

from __future__ import annotations

from webapp.curation.services.rankings import PrefetchPayoff, RankingCache


def _window(cache: RankingCache, made: int, read: int) -> None:
    cache.prefetched += made
    cache.prefetched_read += read


def test_prefetching_goes_on_while_its_rankings_are_read() -> None:
    cache = RankingCache()
    payoff = PrefetchPayoff(cache, window=10, floor=0.2, probe_every=4)
    _window(cache, 10, 6)
    assert all(payoff.allows() for _ in range(8))
    assert not payoff.throttled


def test_unread_prefetches_throttle_it_to_probes_and_read_probes_lift_that() -> None:
    cache = RankingCache()
    payoff = PrefetchPayoff(cache, window=10, floor=0.2, probe_every=4)
    _window(cache, 10, 1)  # 10 % read: outdated before any panel asked
    allowed = [payoff.allows() for _ in range(8)]
    assert payoff.throttled and allowed.count(True) == 2  # one document in four, to keep measuring
    _window(cache, 10, 5)  # the probes are read again (a quieter team)
    assert payoff.allows() and not payoff.throttled


def test_a_cleared_cache_starts_a_new_window() -> None:
    cache = RankingCache()
    payoff = PrefetchPayoff(cache, window=10)
    _window(cache, 10, 0)
    payoff.allows()
    assert payoff.throttled
    cache.clear()
    payoff.reset()
    assert payoff.allows() and not payoff.throttled

