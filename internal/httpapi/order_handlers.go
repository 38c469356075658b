package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/staff"
)

// maxTokenLen bounds the X-Entry-Token header; anything longer cannot be a
// token and is refused without a store lookup.
const maxTokenLen = 256

type orderRequestJSON struct {
	ProductID string `json:"productId"`
	Quantity  int64  `json:"quantity"`
}

func (s *Server) placeOrder(w http.ResponseWriter, r *http.Request) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	var body orderRequestJSON
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	token := r.Header.Get("X-Entry-Token")
	if token == "" || len(token) > maxTokenLen {
		s.writeError(w, r, queue.ErrTokenInvalid)
		return
	}
	start := time.Now()
	o, replayed, err := s.Orders.Place(r.Context(), order.Request{
		UserID: user, ProductID: body.ProductID, Quantity: body.Quantity,
		Token: token, IdempotencyKey: r.Header.Get("Idempotency-Key"), Bypassed: s.bypassOrder(r, body.ProductID),
	})
	s.Metrics.Order(orderResult(err, replayed), time.Since(start))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		status = http.StatusOK
	}
	writeJSON(w, status, o)
}

// bypassOrder reports whether a --bypass rule lets the order request past
// the line that protects the product (and counts it). The product is read
// only when some rule lets the request past some line: ordinary orders
// cost nothing more.
func (s *Server) bypassOrder(r *http.Request, productID string) bool {
	if !s.Bypass.MatchAnyQueue(r) {
		return false
	}
	p, err := s.Orders.Product(r.Context(), productID)
	if err != nil {
		return false // Place answers it
	}
	rule, ok := s.Bypass.Match(r, productJSON(p).Queue)
	if ok {
		s.Metrics.Bypassed(rule)
	}
	return ok
}

// orderResult is the orders_total label: created, replayed, or the error
// code the answer carries (out_of_stock, entry_token_invalid, …).
func orderResult(err error, replayed bool) string {
	switch {
	case err == nil && replayed:
		return "replayed"
	case err == nil:
		return "created"
	}
	row, _ := lookupError(err)
	return row.code
}

func (s *Server) product(w http.ResponseWriter, r *http.Request) {
	p, err := s.Orders.Product(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, productJSON(p))
}

// productJSON shows the protecting queue by name, the default included.
func productJSON(p order.Product) order.Product {
	if p.Queue == "" {
		p.Queue = queue.DefaultQueue
	}
	return p
}

type productRequestJSON struct {
	Name  string `json:"name"`
	Stock *int64 `json:"stock"`
	Queue string `json:"queue"`
}

func (s *Server) putProduct(w http.ResponseWriter, r *http.Request) {
	var body productRequestJSON
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Stock == nil {
		s.writeError(w, r, errWith(errBadRequest, "stock is required"))
		return
	}
	before := s.productBefore(r)
	p, err := s.Orders.PutProduct(r.Context(), order.Product{ID: r.PathValue("id"), Name: body.Name, Stock: *body.Stock, Queue: body.Queue})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.recordProduct(r, before, p)
	writeJSON(w, http.StatusOK, productJSON(p))
}

// productsPage is the default page size of GET /admin/v1/products.
const productsPage = 100

type productListJSON struct {
	Products []order.ProductStats `json:"products"`
	// Next is the ?after= of the following page; absent on the last.
	Next string `json:"next,omitempty"`
}

// listProducts answers a page of products in id order, with their order
// counts: ?after= (the previous page's next) and ?limit= (1..1000, 100).
func (s *Server) listProducts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := productsPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.writeError(w, r, errWith(errBadRequest, "limit must be an integer"))
			return
		}
		limit = n
	}
	page, more, err := s.Orders.Products(r.Context(), q.Get("after"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := productListJSON{Products: make([]order.ProductStats, 0, len(page))}
	for _, p := range page {
		p.Product = productJSON(p.Product)
		out.Products = append(out.Products, p)
	}
	if more {
		out.Next = page[len(page)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}

type restockRequestJSON struct {
	Quantity *int64 `json:"quantity"`
}

// restockProduct adds to a product's stock without overwriting the orders
// taken meanwhile (as reading it and PUTting it back would).
func (s *Server) restockProduct(w http.ResponseWriter, r *http.Request) {
	var body restockRequestJSON
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Quantity == nil {
		s.writeError(w, r, errWith(errBadRequest, "quantity is required"))
		return
	}
	p, err := s.Orders.Restock(r.Context(), r.PathValue("id"), *body.Quantity)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.record(r, staff.Entry{Queue: p.Queue, Detail: "product " + p.ID, Changes: []staff.Change{{Field: "stock", Before: p.Stock - *body.Quantity, After: p.Stock}}})
	writeJSON(w, http.StatusOK, productJSON(p))
}
