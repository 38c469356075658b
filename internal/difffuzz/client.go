package difffuzz

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// conn sends raw requests to one address over a kept-alive connection,
// dialling again when the server closed it.
type conn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
}

// Answer is what a request got: its status, the start of its body and
// the header that tells where a redirect goes. Status 0: no answer (Err).
type Answer struct {
	Status   int
	Body     string
	Location string
	Err      error
}

// maxBody is how much of an answer's body is kept: enough for the
// backends' "PROTECTED …"/"OPEN …" and waitroom's error object.
const maxBody = 2048

// send writes raw and reads the answer. A connection the server may have
// closed while idle is tried once more on a fresh one.
func (c *conn) send(raw []byte, method string) Answer {
	for attempt := 0; ; attempt++ {
		fresh := c.c == nil
		if fresh {
			nc, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
			if err != nil {
				return Answer{Err: err}
			}
			c.c, c.br = nc, bufio.NewReader(nc)
		}
		a := c.roundTrip(raw, method)
		if a.Err == nil || fresh || attempt > 0 {
			return a
		}
	}
}

func (c *conn) roundTrip(raw []byte, method string) Answer {
	c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.c.Write(raw); err != nil {
		c.close()
		return Answer{Err: err}
	}
	// The method tells ReadResponse whether a body follows (none after
	// HEAD); a method the backend took for another one is its own affair.
	res, err := http.ReadResponse(c.br, &http.Request{Method: strings.ToUpper(strings.TrimSpace(method))})
	if err != nil {
		c.close()
		return Answer{Err: fmt.Errorf("reading the answer: %w", err)}
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	a := Answer{Status: res.StatusCode, Body: string(body[:min(len(body), maxBody)]), Location: res.Header.Get("Location")}
	if err != nil || res.Close {
		// Whatever came after the answer on this connection is not the
		// next answer: start again.
		c.close()
	}
	return a
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c, c.br = nil, nil
	}
}
