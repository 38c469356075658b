package httpapi

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/waitroom/waitroom/internal/adminsso"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/staff"
)

// Who may do what through the admin API (issue 56). Each admin operation's
// role is declared once, as x-waitroom-role in openapi.yaml (the embedded
// contract, Options.OpenAPI), and each setting's in queue.Settings; allow
// is the one check of both. An admin route the contract does not declare
// needs admin: fail closed.

// roleExtension names an operation's role in openapi.yaml.
const roleExtension = "x-waitroom-role"

// routeRoles reads each operation's declared role from the contract, by
// the pattern its route is registered with ("PATCH /admin/v1/queues/{queue}").
// A contract that cannot be read declares nothing, so every admin route
// needs admin.
func routeRoles(spec []byte) map[string]staff.Role {
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	roles := map[string]staff.Role{}
	if yaml.Unmarshal(spec, &doc) != nil {
		return roles
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			fields, ok := op.(map[string]any)
			if !ok {
				continue
			}
			if role, ok := fields[roleExtension].(string); ok {
				roles[strings.ToUpper(method)+" "+path] = staff.Role(role)
			}
		}
	}
	return roles
}

// RouteRole is the role the admin route registered as pattern needs:
// its declaration in the contract, admin where there is none.
func (s *Server) RouteRole(pattern string) staff.Role {
	if role, ok := s.roles[pattern]; ok {
		return role
	}
	return staff.Admin
}

// errForbiddenRole: the caller's role is below what the operation, or a
// setting the request would change, needs (403 forbidden_role).
var errForbiddenRole = errors.New("your role may not do this")

// roleRefusal is a 403 forbidden_role naming what needed more.
type roleRefusal struct {
	need  staff.Role
	held  staff.Role
	field string // "" for the operation itself
}

func (e roleRefusal) Error() string {
	if e.field != "" {
		return fmt.Sprintf("%v: changing %s needs the role %s (yours: %s)", errForbiddenRole, e.field, e.need, e.held)
	}
	return fmt.Sprintf("%v: this operation needs the role %s (yours: %s)", errForbiddenRole, e.need, e.held)
}

func (e roleRefusal) Unwrap() error { return errForbiddenRole }

func (e roleRefusal) Details() map[string]string {
	d := map[string]string{"role": string(e.need)}
	if e.field != "" {
		d["field"] = e.field
	}
	return d
}

// admin guards an admin route: it finds who sent the request (adminActor),
// puts them in its context (staff.WithActor: whatever the route changes
// is recorded as theirs) and lets them through if their role meets the
// route's (allow).
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.AdminToken == "" && s.AdminSessions == nil {
			s.writeError(w, r, errAdminOff)
			return
		}
		a, err := s.adminActor(r)
		if err != nil {
			if errors.Is(err, errAdminAuth) {
				s.record(r, staff.Entry{Actor: a, Outcome: staff.Refused, Detail: "credentials that name nobody"})
			}
			s.writeError(w, r, err)
			return
		}
		r = r.WithContext(staff.WithOp(staff.WithActor(r.Context(), a), r.Pattern))
		if s.allow(w, r, s.RouteRole(r.Pattern), "") {
			h(w, r)
		}
	}
}

// adminActor is who sent r: the --admin-token (an admin; compared in
// constant time, and needing no store, so it works while the store is
// away), a named token (staff.Checker), or the admin page's signed-in
// session. Anything else is errAdminAuth, with the actor KindNobody.
func (s *Server) adminActor(r *http.Request) (staff.Actor, error) {
	var addr string
	if a := s.Addresses.Addr(r); a.IsValid() {
		addr = a.String()
	}
	nobody := staff.Actor{Kind: staff.KindNobody, Addr: addr}
	bearer, ok := identity.Bearer(r.Header.Get("Authorization"))
	switch {
	case ok && s.AdminToken != "" && subtle.ConstantTimeCompare([]byte(bearer), []byte(s.AdminToken)) == 1:
		return staff.Actor{Kind: staff.KindAdminToken, Role: staff.Admin, Addr: addr}, nil
	case ok && s.Tokens != nil && staff.LooksLikeToken(bearer):
		a, err := s.Tokens.Check(r.Context(), bearer, addr)
		if errors.Is(err, staff.ErrTokenUnknown) {
			return nobody, errWith(errAdminAuth, err.Error())
		}
		if err != nil {
			return nobody, err // the store cannot say: 503
		}
		a.Addr = addr
		return a, nil
	case !ok && s.AdminSessions != nil:
		a, found, err := s.AdminSessions.Actor(r)
		switch {
		case err != nil && (errors.Is(err, queue.ErrUnavailable) || errors.Is(err, adminsso.ErrCSRF)):
			return nobody, err // 503; 403 csrf_required: a change in a session without its CSRF value
		case err != nil || !found:
			return nobody, errAdminAuth
		}
		a.Addr = addr
		return a, nil
	}
	return nobody, errAdminAuth
}

// allow is the one check of roles: whether the request's actor (in its
// context) holds a role that meets need, for the route (field "") or for
// a setting it would change. A refusal is answered (403 forbidden_role,
// naming the field and the role) and told to the audit log; nothing has
// been written.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, need staff.Role, field string) bool {
	a, _ := staff.ActorOf(r.Context()) // none: the zero actor, who may do nothing
	if a.Role.Allows(need) {
		return true
	}
	refusal := roleRefusal{need: need, held: a.Role, field: field}
	detail := fmt.Sprintf("%s needs %s", r.Pattern, need)
	if q := r.PathValue("queue"); q != "" {
		detail += "; queue " + q
	}
	if field != "" {
		detail += "; field " + field
	}
	s.record(r, staff.Entry{Actor: a, Outcome: staff.Refused, Detail: detail})
	s.writeError(w, r, refusal)
	return false
}

// mayPatch checks, against its row's role, each setting the PATCH would
// change: every setting whose value after queue.Apply differs from what is
// stored, so a side effect counts as a change (a rate set turns the
// adaptive rate off), and a setting sent as it is changes nothing and
// needs no role beyond the route's. A PATCH Apply refuses is checked by the
// settings it names, so that its 400 tells nobody more than their role
// lets them try. The first setting in queue.Settings' order above the
// caller's role refuses the PATCH whole.
func (s *Server) mayPatch(w http.ResponseWriter, r *http.Request, stored queue.Config, changes map[string]any) bool {
	after, err := queue.Apply(stored, changes)
	for _, set := range queue.Settings {
		if set.ReadOnly {
			continue
		}
		if _, named := changes[set.Name]; err != nil && !named {
			continue
		}
		if err == nil && reflect.DeepEqual(set.Value(after), set.Value(stored)) {
			continue
		}
		if !s.allow(w, r, set.Role, set.Name) {
			return false
		}
	}
	return true
}
