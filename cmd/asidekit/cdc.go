package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/asidekit/asidekit/repo/cdc"
)

// slotStatus is what PostgreSQL says of the CDC slot.
type slotStatus struct {
	Slot   string `json:"slot"`
	Exists bool   `json:"exists"`
	// WALStatus is pg_replication_slots.wal_status: reserved, extended,
	// unreserved or lost (a lost slot is recreated by the next Run, with
	// a cold cache).
	WALStatus string `json:"wal_status,omitempty"`
	// Confirmed is the position up to which the holder applied every
	// change; Current the end of the server's log.
	Confirmed string `json:"confirmed_lsn,omitempty"`
	Current   string `json:"current_lsn,omitempty"`
	// LagBytes is Current - Confirmed.
	LagBytes int64 `json:"lag_bytes"`
	// LagSeconds is the holder's replay lag as PostgreSQL measures it
	// (pg_stat_replication.replay_lag), null when not known (no holder,
	// or nothing sent since it caught up).
	LagSeconds *float64 `json:"lag_seconds"`
	// Holder is the process streaming from the slot, nil when none does.
	Holder *slotHolder `json:"holder"`
	// Problem says what is wrong, "" when nothing is.
	Problem string `json:"problem,omitempty"`
}

type slotHolder struct {
	PID         int        `json:"pid"`
	Client      string     `json:"client,omitempty"`
	Application string     `json:"application,omitempty"`
	Since       *time.Time `json:"since,omitempty"`
}

// runCDC is cdc status|drop.
func runCDC(r *runner, args []string) error {
	fs := r.flags("cdc")
	pos, err := r.parse(fs, args, "status|drop", 1, 1)
	if err != nil {
		return err
	}
	cfg, err := r.config()
	if err != nil {
		return err
	}
	switch pos[0] {
	case "status":
		return r.cdcStatus(cfg)
	case "drop":
		if err := r.confirm("drop the CDC slot " + cfg.CDCSlot + " and its publication (the cache stops following writes made outside repo)"); err != nil {
			return err
		}
		if _, err := r.b.DB(r.ctx); err != nil {
			return err
		}
		inv, err := cdc.New(cfg.DSN, &cdc.Options{Slot: cfg.CDCSlot})
		if err != nil {
			return usageErr("%v", err)
		}
		if err := inv.Drop(r.ctx); err != nil {
			if errors.Is(err, cdc.ErrSlotActive) {
				return &exitError{exitProblem, fmt.Errorf("%w (stop every process of the service first)", err)}
			}
			return err
		}
		return r.output(map[string]any{"dropped": cfg.CDCSlot}, func(w io.Writer) {
			fmt.Fprintf(w, "dropped slot %s and its publication\n", cfg.CDCSlot)
		})
	}
	return usageErr("usage: asidekit cdc status|drop")
}

func (r *runner) cdcStatus(cfg *Config) error {
	db, err := r.b.DB(r.ctx)
	if err != nil {
		return err
	}
	var row struct {
		WALStatus   string     `gorm:"column:wal_status"`
		Confirmed   string     `gorm:"column:confirmed"`
		Current     string     `gorm:"column:current"`
		LagBytes    int64      `gorm:"column:lag_bytes"`
		PID         *int       `gorm:"column:pid"`
		Client      *string    `gorm:"column:client"`
		Application *string    `gorm:"column:application"`
		Since       *time.Time `gorm:"column:since"`
		LagSeconds  *float64   `gorm:"column:lag_seconds"`
	}
	res := db.WithContext(r.ctx).Raw(`SELECT coalesce(s.wal_status, '') AS wal_status,
			coalesce(s.confirmed_flush_lsn::text, '') AS confirmed,
			pg_current_wal_lsn()::text AS current,
			coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn), 0)::bigint AS lag_bytes,
			s.active_pid AS pid, a.client_addr::text AS client, a.application_name AS application,
			a.backend_start AS since, extract(epoch FROM r.replay_lag)::float8 AS lag_seconds
		FROM pg_replication_slots s
		LEFT JOIN pg_stat_activity a ON a.pid = s.active_pid
		LEFT JOIN pg_stat_replication r ON r.pid = s.active_pid
		WHERE s.slot_name = ?`, cfg.CDCSlot).Scan(&row)
	if res.Error != nil {
		return fmt.Errorf("cdc status: %w", res.Error)
	}
	st := slotStatus{Slot: cfg.CDCSlot, Exists: res.RowsAffected > 0}
	if st.Exists {
		st.WALStatus, st.Confirmed, st.Current, st.LagBytes, st.LagSeconds = row.WALStatus, row.Confirmed, row.Current, row.LagBytes, row.LagSeconds
		if row.PID != nil {
			h := &slotHolder{PID: *row.PID, Since: row.Since}
			if row.Client != nil {
				h.Client = *row.Client
			}
			if row.Application != nil {
				h.Application = *row.Application
			}
			st.Holder = h
		}
	}
	switch {
	case !st.Exists:
		st.Problem = "no such slot: nothing follows writes made outside repo (does the service run cdc?)"
	case st.WALStatus == "lost":
		st.Problem = "the slot is lost (it fell behind max_slot_wal_keep_size): the next Run recreates it with a cold cache"
	case st.Holder == nil:
		st.Problem = "no process holds the slot: writes made outside repo are not applied, and the server keeps their WAL"
	}
	if err := r.output(st, func(w io.Writer) {
		fmt.Fprintf(w, "slot      %s\n", st.Slot)
		if st.Exists {
			fmt.Fprintf(w, "wal       %s, confirmed %s, current %s\n", st.WALStatus, st.Confirmed, st.Current)
			lag := "unknown"
			if st.LagSeconds != nil {
				lag = fmt.Sprintf("%.3fs", *st.LagSeconds)
			}
			fmt.Fprintf(w, "lag       %d bytes, %s\n", st.LagBytes, lag)
			if h := st.Holder; h != nil {
				fmt.Fprintf(w, "holder    pid %d", h.PID)
				if h.Client != "" {
					fmt.Fprintf(w, " from %s", h.Client)
				}
				if h.Since != nil {
					fmt.Fprintf(w, " since %s", h.Since.Format(time.RFC3339))
				}
				fmt.Fprintln(w)
			}
		}
		if st.Problem != "" {
			fmt.Fprintf(w, "problem   %s\n", st.Problem)
		}
	}); err != nil {
		return err
	}
	if st.Problem != "" {
		return errProblem
	}
	return nil
}
