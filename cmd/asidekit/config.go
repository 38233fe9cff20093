package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// DefaultConfigFile is the config file read when neither -config nor
// ASIDEKIT_CONFIG names one.
const DefaultConfigFile = "asidekit.json"

// Config is the CLI's config file: where the service's servers are and
// what it caches. String values may name environment variables as ${VAR}
// (a password, a DSN kept in the environment): they are expanded when the
// file is read.
type Config struct {
	// DSN is the PostgreSQL database of the service's tables (a URL or
	// key=value string). Required.
	DSN string `json:"dsn"`
	// Redis is the address of a standalone Redis, host:port.
	Redis string `json:"redis,omitempty"`
	// RedisCluster are seed addresses of a Redis Cluster, instead of Redis.
	RedisCluster []string `json:"redis_cluster,omitempty"`
	// RedisUsername and RedisPassword authenticate to Redis. Default none.
	RedisUsername string `json:"redis_username,omitempty"`
	RedisPassword string `json:"redis_password,omitempty"`
	// Namespace is the service's key namespace (asidekit.Config.Namespace,
	// or the packages' Options.Namespace). Default "ak".
	Namespace string `json:"namespace,omitempty"`
	// CDCSlot is the repo/cdc slot of the service. Default "asidekit_cdc".
	CDCSlot string `json:"cdc_slot,omitempty"`
	// ConfigScope is the repo/configstore scope of config get|set|list.
	// Default "default".
	ConfigScope string `json:"config_scope,omitempty"`
	// Entities are the cached tables, one per repo.Repository.
	Entities []EntityConfig `json:"entities"`
}

// EntityConfig describes one repository: what repo.New reads from the Go
// model, written down for a program that has no Go types.
type EntityConfig struct {
	// Name is the entity's name in Redis keys (repo.Options.Name).
	// Default: Table.
	Name string `json:"name,omitempty"`
	// Table is the table, optionally schema-qualified. Required.
	Table string `json:"table"`
	// Key is the primary key column. Default "id".
	Key string `json:"key,omitempty"`
	// Unique are the single-column unique keys GetBy reads by.
	Unique []string `json:"unique,omitempty"`
	// Codec is the cache's codec: "json", the default and the only one
	// the CLI reads (values are compared as JSON documents).
	Codec string `json:"codec,omitempty"`
	// Filter is the Bloom filters' sizing (repo.Options.Filter), which
	// must equal the service's; nil when the repository has no filter.
	Filter *FilterConfig `json:"filter,omitempty"`
}

// FilterConfig is a bloom.Options sizing.
type FilterConfig struct {
	Capacity          int64   `json:"capacity"`
	FalsePositiveRate float64 `json:"false_positive_rate"`
	Shards            int     `json:"shards,omitempty"`
}

// loadConfig reads and checks the config file at path.
func loadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageErr("no config file %s (write one with `asidekit init`, or name it with -config)", path)
		}
		return nil, usageErr("read config: %v", err)
	}
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, usageErr("config %s: %v", path, err)
	}
	c.expand()
	if err := c.check(); err != nil {
		return nil, usageErr("config %s: %v", path, err)
	}
	return &c, nil
}

// expand replaces ${VAR} in the string fields.
func (c *Config) expand() {
	for _, p := range []*string{&c.DSN, &c.Redis, &c.RedisUsername, &c.RedisPassword, &c.Namespace} {
		*p = os.ExpandEnv(*p)
	}
	for i := range c.RedisCluster {
		c.RedisCluster[i] = os.ExpandEnv(c.RedisCluster[i])
	}
}

// check fills the defaults and refuses what cannot work.
func (c *Config) check() error {
	if c.Namespace == "" {
		c.Namespace = "ak"
	}
	if c.CDCSlot == "" {
		c.CDCSlot = "asidekit_cdc"
	}
	if c.ConfigScope == "" {
		c.ConfigScope = "default"
	}
	for i := range c.Entities {
		e := &c.Entities[i]
		if e.Table == "" {
			return fmt.Errorf("entity %d: no table", i)
		}
		if e.Name == "" {
			e.Name = e.Table
			if j := strings.LastIndexByte(e.Name, '.'); j >= 0 {
				e.Name = e.Name[j+1:]
			}
		}
		if e.Key == "" {
			e.Key = "id"
		}
		switch e.Codec {
		case "":
			e.Codec = "json"
		case "json":
		default:
			return fmt.Errorf("entity %s: codec %q: the CLI reads json only", e.Name, e.Codec)
		}
		if f := e.Filter; f != nil && (f.Capacity <= 0 || f.FalsePositiveRate <= 0 || f.FalsePositiveRate >= 1) {
			return fmt.Errorf("entity %s: filter needs a capacity > 0 and a false_positive_rate in (0, 1)", e.Name)
		}
	}
	return nil
}

// entity returns the entity named name.
func (c *Config) entity(name string) (*EntityConfig, error) {
	for i := range c.Entities {
		if c.Entities[i].Name == name {
			return &c.Entities[i], nil
		}
	}
	names := make([]string, len(c.Entities))
	for i, e := range c.Entities {
		names[i] = e.Name
	}
	slices.Sort(names)
	return nil, usageErr("unknown entity %q (the config names: %s)", name, strings.Join(names, ", "))
}

// unique reports whether col is one of e's unique columns.
func (e *EntityConfig) unique(col string) bool { return slices.Contains(e.Unique, col) }

// lookupName is the entity of e's GetBy mapping of col (repo's
// "<name>.by.<column>"), which is also the name of its Bloom filter.
func (e *EntityConfig) lookupName(col string) string { return e.Name + ".by." + col }
