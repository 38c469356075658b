// Package apptest starts a whole waitroom in a test and speaks to it as
// its clients do, for the end-to-end tests of every package that needs
// the real program: Boot (serve) and BootGateway or BootProxy (`waitroom
// proxy` in front of an upstream, such as an UpstreamShop) start one on
// :0 with Redis and PostgreSQL from internal/testenv or the embedded
// stores, closed when the test ends; an Instance sends requests (Do, As,
// AdminAuth, FireAll) and reads their answers (Response); Shop reads it
// through the order API; Visitor is a person with a headless browser.
//
// It is test support: a normal package so that other packages' tests
// may import it, never imported by the product.
package apptest
