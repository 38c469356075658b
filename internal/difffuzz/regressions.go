package difffuzz

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"unicode/utf16"
)

// form is an urlencoded form body's header.
var form = [2]string{"Content-Type", "application/x-www-form-urlencoded"}

// Regressions are the ways past the gateway found so far, one example of
// each class: by the differential fuzzer of issue 35 (against Jetty, Flask
// and Express) and by reading, and issue 19's spellings before them. Every
// run sends them first.
var Regressions = []Request{
	// Issue 35, found by fuzzing.
	{Classes: []string{"override-form"}, Method: "POST", Target: "/items/7", Header: [][2]string{form}, Body: []byte("_method=put")},
	{Classes: []string{"dot-segment"}, Method: "POST", Target: "/api//../buy"},
	{Classes: []string{"fragment"}, Method: "POST", Target: "/items/7?_method=PUT#"},
	{Classes: []string{"encoded-slash"}, Method: "PUT", Target: "/items/%2F"},
	{Classes: []string{"encoded-slash"}, Method: "PUT", Target: "/items%2F7%252F8"},
	{Classes: []string{"compressed-body"}, Method: "POST", Target: "/items/7", Header: [][2]string{form, {"Content-Encoding", "gzip"}}, Body: gzipped("_method=PUT")},
	{Classes: []string{"compressed-body"}, Method: "POST", Target: "/items/7", Header: [][2]string{form, {"Content-Encoding", "deflate"}}, Body: deflated("_method=PUT")},
	{Classes: []string{"override-json"}, Method: "POST", Target: "/items/7", Header: [][2]string{{"Content-Type", "application/json"}}, Body: []byte(`{"\u005fmethod":"PUT"}`)},
	{Classes: []string{"utf16-body"}, Method: "POST", Target: "/items/7", Header: [][2]string{{"Content-Type", "application/x-www-form-urlencoded; charset=UTF-16LE"}}, Body: utf16le("_method=PUT")},
	{Classes: []string{"utf16-body"}, Method: "POST", Target: "/items/7", Header: [][2]string{{"Content-Type", "application/json; charset=utf-16le"}}, Body: utf16le(`{"_method":"PUT"}`)},
	{Classes: []string{"override-query"}, Method: "POST", Target: "/items/7?_method[]=PUT"},
	{Classes: []string{"override-header"}, Method: "POST", Target: "/items/7", Header: [][2]string{{"X-HTTP-Method-Override", "\xa0PUT"}}},
	{Classes: []string{"host"}, Method: "POST", Target: "/checkout", Host: "blog.example.com"},
	// Issue 35, found by reading.
	{Classes: []string{"connection"}, Method: "POST", Target: "/items/7", Header: [][2]string{{"Content-Type", "text/plain"}, {"Connection", "close, Content-Type"}}, Body: []byte("_method=PUT")},
	{Classes: []string{"override-query"}, Method: "POST", Target: "/items/7?.method=PUT"},
	{Classes: []string{"override-query"}, Method: "POST", Target: "/items/7?+method=PUT"},
	{Classes: []string{"override-query"}, Method: "POST", Target: "/items/7?[method=PUT"},
	{Classes: []string{"upgrade"}, Method: "POST", Target: "/checkout", Header: [][2]string{{"Connection", "Upgrade, HTTP2-Settings"}, {"Upgrade", "h2c"}, {"HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA"}}},
	// Issue 50: Go's server refuses these before waitroom's handler; through
	// nginx, the decision's subrequest was refused so, and nginx answered 500.
	{Classes: []string{"host"}, Method: "POST", Target: "/checkout", Host: "a@shop.test"},
	{Classes: []string{"host"}, Method: "POST", Target: "/checkout", HTTP10: true},
	{Classes: []string{"host"}, Method: "GET", Target: "/items/7", HTTP10: true},
	{Classes: []string{"absolute-form", "host"}, Method: "POST", Target: "http://shop.example.com/checkout", Host: "a@shop.test"},
	// And a header value nginx passes on and Go's server refuses (DEL):
	// that 500 was read as "waitroom away", and a GET went on unjudged.
	{Classes: []string{"header-value"}, Method: "GET", Target: "/drops/9/buy", Header: [][2]string{{"X-Note", "a\x7fb"}}},
	{Classes: []string{"header-value"}, Method: "POST", Target: "/checkout", Header: [][2]string{{"X-Note", "a\x7fb"}}},
	// Issue 19's.
	{Classes: []string{"path-param"}, Method: "POST", Target: "/checkout;jsessionid=x"},
	{Classes: []string{"path-param"}, Method: "POST", Target: "/api;x=1/buy"},
	{Classes: []string{"method-case"}, Method: "post", Target: "/checkout"},
	{Classes: []string{"percent-encode"}, Method: "POST", Target: "/%63heckout"},
	{Classes: []string{"dot-segment"}, Method: "POST", Target: "/./checkout"},
	{Classes: []string{"dot-segment"}, Method: "POST", Target: "/x/../checkout"},
	{Classes: []string{"double-slash"}, Method: "POST", Target: "//checkout"},
	{Classes: []string{"encoded-slash"}, Method: "POST", Target: "/api%2Fbuy"},
	{Classes: []string{"override-header"}, Method: "POST", Target: "/items/7", Header: [][2]string{{"X-HTTP-Method-Override", "PUT"}}},
	{Classes: []string{"override-header"}, Method: "POST", Target: "/items/7", Header: [][2]string{{"X_HTTP_Method_Override", "put"}}},
	{Classes: []string{"override-header"}, Method: "POST", Target: "/items/7", Header: [][2]string{{"X-Method-Override", "PUT"}}},
	{Classes: []string{"override-query"}, Method: "POST", Target: "/items/7?_method=PUT"},
	{Classes: []string{"extension"}, Method: "POST", Target: "/checkout.json"},
	{Classes: []string{"trailing"}, Method: "POST", Target: "/checkout%20"},
	{Classes: []string{"trailing"}, Method: "POST", Target: "/checkout%00"},
	{Classes: []string{"case"}, Method: "POST", Target: "/CHECKOUT"},
	{Classes: []string{"override-multipart"}, Method: "POST", Target: "/items/7", Header: [][2]string{{"Content-Type", "multipart/form-data; boundary=b"}}, Body: []byte("--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nPUT\r\n--b--\r\n")},
	{Classes: []string{"chunked-body"}, Method: "POST", Target: "/items/7", Header: [][2]string{form}, Body: []byte("_method=PUT"), Chunked: true},
	{Classes: []string{"absolute-form"}, Method: "POST", Target: "http://shop.example.com/checkout"},
}

// Benign are requests as browsers and curl spell them, to routes nothing
// protects: every one must reach the backend (the gateway refuses none).
var Benign = []Request{
	{Method: "GET", Target: "/"},
	{Method: "GET", Target: "/products/42?ref=home&utm_source=mail"},
	{Method: "GET", Target: "/products/caf%C3%A9"},
	{Method: "GET", Target: "/search?q=hello+world&page=2"},
	{Method: "GET", Target: "/search?q=%25%20off"},
	{Method: "GET", Target: "/search?q=%E2%9C%93&sort=-price"},
	{Method: "GET", Target: "/wiki/C%23"},
	{Method: "GET", Target: "/tags/c%2B%2B"},
	{Method: "GET", Target: "/files/a%20b.txt"},
	{Method: "GET", Target: "/~alice/"},
	{Method: "GET", Target: "/static/app.3f2a9c.js"},
	{Method: "GET", Target: "/shoes;color=red"},
	{Method: "GET", Target: "/api/v1/things?filter[name]=x&fields=a,b"},
	{Method: "GET", Target: "/checkout"},
	{Method: "GET", Target: "/items/7"},
	{Method: "GET", Target: "/drops/9"},
	{Method: "GET", Target: "/products/%E6%97%A5%E6%9C%AC"},
	{Method: "GET", Target: "/a/b/c/"},
	{Method: "HEAD", Target: "/products/42"},
	{Method: "OPTIONS", Target: "/products/42"},
	{Method: "DELETE", Target: "/items/7"},
	{Method: "POST", Target: "/items/7"},
	{Method: "POST", Target: "/search", Header: [][2]string{{"Content-Type", "application/json"}}, Body: []byte(`{"q":"tee","_method":"PUT"}`)},
	{Method: "POST", Target: "/contact", Header: [][2]string{form}, Body: []byte("name=Al&msg=hi+there")},
	{Method: "POST", Target: "/api/basket", Header: [][2]string{{"Content-Type", "application/json"}}, Body: []byte(`{"item":7}`)},
	{Method: "PUT", Target: "/api/basket/7", Header: [][2]string{{"Content-Type", "application/json"}}, Body: []byte(`{"qty":2}`)},
	{Method: "GET", Target: "/", Header: [][2]string{{"Connection", "keep-alive"}, {"Accept", "text/html"}, {"User-Agent", "Mozilla/5.0"}}},
	{Method: "GET", Target: "/products/42", Header: [][2]string{{"User-Agent", "curl/7.88.1"}, {"Accept", "*/*"}}},
	{Method: "GET", Target: "/ws", Header: [][2]string{{"Connection", "Upgrade"}, {"Upgrade", "h2c"}, {"HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA"}}},
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func deflated(s string) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.DefaultCompression)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func utf16le(s string) []byte {
	var b bytes.Buffer
	for _, u := range utf16.Encode([]rune(s)) {
		b.WriteByte(byte(u))
		b.WriteByte(byte(u >> 8))
	}
	return b.Bytes()
}
