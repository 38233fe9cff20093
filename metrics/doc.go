// Package metrics exports asidekit's counters to Prometheus. It is a
// module of its own, the way go-redis keeps its Prometheus hook in extra/:
// no core package imports it, so a service that does not use Prometheus
// neither links nor downloads it (see docs/metrics.md).
// Its module path is github.com/asidekit/asidekit/metrics, required apart
// from the core module:
//
//	go get github.com/asidekit/asidekit/metrics
//
// A service built against a checkout of asidekit needs a replace line for
// this module too, beside the core's (else go resolves it from the
// network):
//
//	replace github.com/asidekit/asidekit => ../asidekit
//	replace github.com/asidekit/asidekit/metrics => ../asidekit/metrics
//
// Collectors, each registered by the caller on the registry of its
// choice (reg.MustRegister):
//
//   - CacheObserver (NewCacheObserver) is a cacheaside.Observer: pass it as
//     cacheaside.Options.Observer and it counts every entity's events as
//     they happen, and the loaders' latency in a histogram.
//   - NewLockCollector reads a lock.Locker's or lock.Redlock's Stats at
//     scrape time.
//   - NewConfigStoreCollector reads a configstore.Store's Stats at scrape
//     time.
//   - NewBloomCollector reads a bloom.Filter's Stats (fill ratio, estimated
//     false-positive rate, trust) from Redis at scrape time, within a short
//     deadline; a failed read reports asidekit_bloom_up 0 and never fails
//     the scrape.
//   - NewLimitCollector reads a limit.Limiter's or limit.Semaphore's Stats
//     (allowed, refused, errors) at scrape time.
//   - NewSeqgenCollector reads a seqgen.Generator's Stats (segments
//     reserved, refills, waits on the DB) at scrape time.
//   - NewQueryCollector reads a repo.Query's Stats (list invalidations,
//     fallbacks to all lists) at scrape time.
//   - NewReadCollector reads a repo.Repository's ReadStats (loads per
//     target, replica or primary, redirects for lag, unavailability or an
//     unknown position) at scrape time.
//   - NewAfterCommitCollector reads the process's repo.AfterCommitStats
//     (upkeep that failed after a commit, its retries, writes of unknown
//     outcome) at scrape time.
//   - NewCDCCollector reads a cdc.Invalidator's Stats (applied changes,
//     lag, errors, stand-by checks) at scrape time.
//
// # Metrics
//
// With the default namespace "asidekit":
//
//	asidekit_cache_events_total{entity,event}      counter, event = cacheaside.Event.String()
//	asidekit_cache_load_seconds{entity,outcome}    histogram, outcome = ok | error
//	asidekit_lock_obtained_total{locker}           counter
//	asidekit_lock_not_obtained_total{locker}       counter
//	asidekit_lock_errors_total{locker}             counter
//	asidekit_lock_waits_total{locker}              counter
//	asidekit_lock_wakeups_total{locker,by}         counter, by = notification | timer
//	asidekit_lock_notifications_total{locker}      counter
//	asidekit_lock_subscriptions_total{locker}      counter
//	asidekit_configstore_rebuilds_total{store}     counter
//	asidekit_configstore_rebuild_waits_total{store}
//	asidekit_configstore_repairs_total{store}
//	asidekit_configstore_mirror_errors_total{store}
//	asidekit_configstore_reconciles_total{store}
//	asidekit_configstore_fixes_total{store}
//	asidekit_configstore_db_fallbacks_total{store}
//	asidekit_configstore_fallback_queries_total{store}
//	asidekit_bloom_{bits,bits_set,fill_ratio,estimated_count}{filter}   gauges
//	asidekit_bloom_{false_positive_rate,generation,rebuilding}{filter}  gauges
//	asidekit_bloom_{untrusted_shards,up}{filter}                        gauges
//	asidekit_bloom_{untrusted_checks,auto_rebuilds}_total{filter}       counters
//	asidekit_bloom_{auto_rebuild_failures,scrape_errors}_total{filter}  counters
//	asidekit_limit_calls_total{limiter,outcome}    counter, outcome = allowed | refused | error
//	asidekit_limit_failed_open_total{limiter}      counter
//	asidekit_limit_local_fallbacks_total{limiter}  counter
//	asidekit_seqgen_segments_reserved_total{generator}
//	asidekit_seqgen_segments_dropped_total{generator}
//	asidekit_seqgen_refills_total{generator,mode}  counter, mode = background | sync
//	asidekit_seqgen_waits_total{generator}
//	asidekit_query_invalidations_total{query}      counter
//	asidekit_query_patches_total{query}            counter
//	asidekit_query_fallbacks_total{query}          counter
//	asidekit_reads_loads_total{repository,target}  counter, target = replica | primary
//	asidekit_reads_redirects_total{repository,reason}  counter, reason = lag | unavailable | unknown
//	asidekit_reads_replica_errors_total{repository}
//	asidekit_reads_write_position_errors_total{repository}
//	asidekit_reads_lag_bytes{repository}           gauge
//	asidekit_repo_upkeep_{failures,retried,dropped}_total              counters
//	asidekit_repo_upkeep_pending                                       gauge
//	asidekit_repo_{unknown_outcome_writes,filter_distrusts}_total      counters
//	asidekit_cdc_…{invalidator}                    see NewCDCCollector
//
// The cache events counter has one series per entity and event, all
// created (at zero) the first time an entity reports anything, so that
// rate() and ratios such as hits / (hits + misses) work from the start.
// The load histogram's count with outcome="ok" equals the entity's
// Stats().Loads, and with outcome="error" its Stats().LoadErrors; the
// per-entity Stats snapshot is therefore not exported a second time.
//
// Only the Bloom collector reads Redis at scrape time; the others read
// counters in memory and cannot fail. No collector of this package makes
// a scrape fail: with promhttp.HandlerOpts' default ErrorHandling, one
// failing collector turns the whole of /metrics into an HTTP 500.
//
// Two CacheObservers with the same namespace cannot be registered on one
// registry (Register returns a prometheus.AlreadyRegisteredError); share
// one observer between Caches, or give each its own Namespace. Likewise
// each lock or config store collector on a registry needs its own name.
package metrics
