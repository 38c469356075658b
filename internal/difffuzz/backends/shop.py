"""The differential fuzzer's Flask shop: one @app.route per protected route,
a catch-all for everything else, and the method-override middleware of
Flask's documentation. A protected handler answers "PROTECTED <route>" and
records "<X-Fuzz-Id> <method> <route>" (and " user=<X-Waitroom-User>" when
the gateway said who); the catch-all answers
"OPEN <method> <path>". GET /__hits lists the records, DELETE clears them."""
import logging
import threading

from flask import Flask, request
from werkzeug.serving import make_server

app = Flask(__name__)
hits = []
lock = threading.Lock()

# The catch-all's methods: Werkzeug takes any name here (it answers 405 to
# a method no rule lists), so HTTP's and WebDAV's, not only the usual ones.
ALL = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT",
       "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK"]


def text(body):
    return body, 200, {"Content-Type": "text/plain; charset=utf-8"}


def protect(route):
    with lock:
        user = request.headers.get("X-Waitroom-User")
        hits.append("%s %s %s%s" % (request.headers.get("X-Fuzz-Id", "-"), request.method, route, "" if user is None else " user=" + user))
    return text("PROTECTED " + route)


# Static rules rank before the catch-all's converter rule in Werkzeug's
# matcher, so /__hits is never the catch-all's (a POST to it is).
@app.route("/__hits", methods=["GET", "DELETE"])
def list_hits():
    with lock:
        if request.method == "DELETE":
            hits.clear()
            return text("")
        return text("".join(h + "\n" for h in hits))


@app.route("/checkout", methods=["POST"])
def checkout():
    return protect("POST /checkout")


@app.route("/api/buy", methods=["POST"])
def buy():
    return protect("POST /api/buy")


@app.route("/items/<item>", methods=["PUT"])
def put_item(item):
    return protect("PUT /items/{id}")


@app.route("/orders/<order>/pay", methods=["POST"])
def pay(order):
    return protect("POST /orders/{id}/pay")


# GET: Flask adds HEAD to a GET route itself.
@app.route("/drops/<drop>/buy", methods=["GET"])
def drop(drop):
    return protect("GET /drops/{id}/buy")


# Werkzeug passes a path whose rule lists other methods on to the next
# matching rule, so GET /checkout lands here, not in a 405.
@app.route("/", defaults={"p": ""}, methods=ALL)
@app.route("/<path:p>", methods=ALL)
def open_(p):
    return text("OPEN %s %s" % (request.method, request.path))


class HTTPMethodOverrideMiddleware:
    """X-HTTP-Method-Override, as Flask's documentation has it."""

    allowed_methods = frozenset(["GET", "HEAD", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"])
    bodyless_methods = frozenset(["GET", "HEAD", "OPTIONS", "DELETE"])

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        method = environ.get("HTTP_X_HTTP_METHOD_OVERRIDE", "").upper()
        if method in self.allowed_methods:
            environ["REQUEST_METHOD"] = method
        if method in self.bodyless_methods:
            environ["CONTENT_LENGTH"] = "0"
        return self.app(environ, start_response)


app.wsgi_app = HTTPMethodOverrideMiddleware(app.wsgi_app)


if __name__ == "__main__":
    # No access log: a line on stderr for each of thousands of requests a
    # second is only cost. Errors are still logged.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    # threaded=True speaks HTTP/1.1 (Werkzeug sets protocol_version
    # itself), but Werkzeug 2.1 and later answer every request with
    # "Connection: close": its server cannot drain an unread body before
    # the next request line, so it keeps no connection alive.
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print("PORT %d" % server.server_port, flush=True)
    server.serve_forever()
