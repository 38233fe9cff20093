package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/guard/limit/httplimit"
	"github.com/asidekit/asidekit/repo"
)

// Handler returns the service's routes behind the per-IP limiter
// (/metrics is left out of the limit, for the scraper).
func (s *Service) Handler() http.Handler {
	api := http.NewServeMux()
	api.HandleFunc("GET /products/{id}", s.getProduct)
	api.HandleFunc("GET /products/by-slug/{slug}", s.getProductBySlug)
	api.HandleFunc("PUT /products/{id}", s.putProduct)
	api.HandleFunc("POST /orders", s.createOrder)
	mw, err := httplimit.New(s.limiter, nil)
	if err != nil {
		panic(err) // nil options and a limiter: cannot fail
	}
	root := http.NewServeMux()
	root.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	root.Handle("/", mw.Handler(api))
	return root
}

func (s *Service) getProduct(w http.ResponseWriter, r *http.Request) {
	p, err := s.products.Get(r.Context(), r.PathValue("id"))
	reply(w, p, err)
}

func (s *Service) getProductBySlug(w http.ResponseWriter, r *http.Request) {
	p, err := s.products.GetBy(r.Context(), "slug", r.PathValue("slug"))
	reply(w, p, err)
}

func (s *Service) putProduct(w http.ResponseWriter, r *http.Request) {
	var p Product
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&p); err != nil {
		http.Error(w, "bad JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	p.ID = r.PathValue("id")
	if p.Slug == "" || p.Name == "" || p.PriceCents < 0 {
		http.Error(w, "slug and name are required, price_cents >= 0", http.StatusBadRequest)
		return
	}
	err := s.products.Put(r.Context(), &p) // nil once written: cache upkeep that failed is retried in the background
	reply(w, p, err)
}

func (s *Service) createOrder(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ProductID string `json:"product_id"`
		Quantity  int    `json:"quantity"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil || in.Quantity < 1 {
		http.Error(w, "want {\"product_id\": …, \"quantity\": >= 1}", http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	if _, err := s.products.Get(ctx, in.ProductID); err != nil {
		reply(w, nil, err)
		return
	}
	serial, err := s.orders.Next(ctx, "ORD")
	if err != nil {
		reply(w, nil, err)
		return
	}
	o := Order{Serial: serial, ProductID: in.ProductID, Quantity: in.Quantity}
	if err := s.db.WithContext(ctx).Create(&o).Error; err != nil {
		reply(w, nil, err)
		return
	}
	w.Header().Set("Location", "/orders/"+o.Serial)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(o)
}

// reply writes v as JSON, or err as its status.
func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		code := statusOf(err)
		http.Error(w, http.StatusText(code), code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// statusOf maps the errors of repo, GORM and the guards to HTTP statuses.
func statusOf(err error) int {
	switch {
	case errors.Is(err, repo.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, repo.ErrInvalidID):
		return http.StatusBadRequest
	case errors.Is(err, gorm.ErrDuplicatedKey): // needs gorm.Config.TranslateError
		return http.StatusConflict
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return httplimit.StatusOf(err)
	}
	return http.StatusInternalServerError
}
