package apptest

// The admin API's writes and reads the tests set their scene with; each
// fails the test unless it answers 200.

// PutQueue creates or replaces queue name's settings (PUT
// /admin/v1/queues/{name}) and returns the answer.
func (in *Instance) PutQueue(name string, cfg map[string]any) Response {
	in.T.Helper()
	r := in.Do("PUT", "/admin/v1/queues/"+name, in.AdminAuth(), cfg)
	if r.Status != 200 {
		in.T.Fatalf("PUT queue %s: %d %s", name, r.Status, r.Raw)
	}
	return r
}

// PatchQueue changes some of queue name's settings (PATCH
// /admin/v1/queues/{name}) and returns the answer.
func (in *Instance) PatchQueue(name string, cfg map[string]any) Response {
	in.T.Helper()
	r := in.Do("PATCH", "/admin/v1/queues/"+name, in.AdminAuth(), cfg)
	if r.Status != 200 {
		in.T.Fatalf("PATCH queue %s: %d %s", name, r.Status, r.Raw)
	}
	return r
}

// QueueStats reads queue name's settings and figures (GET
// /admin/v1/queues/{name}).
func (in *Instance) QueueStats(name string) Response {
	in.T.Helper()
	r := in.Do("GET", "/admin/v1/queues/"+name, in.AdminAuth(), nil)
	if r.Status != 200 {
		in.T.Fatalf("GET stats %s: %d %s", name, r.Status, r.Raw)
	}
	return r
}

// PutProduct creates or replaces product id, sold behind queue.
func (in *Instance) PutProduct(id, name string, stock int, queue string) {
	in.T.Helper()
	body := map[string]any{"name": name, "stock": stock, "queue": queue}
	if r := in.Do("PUT", "/admin/v1/products/"+id, in.AdminAuth(), body); r.Status != 200 {
		in.T.Fatalf("PUT product %s: %d %s", id, r.Status, r.Raw)
	}
}
