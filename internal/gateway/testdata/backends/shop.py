"""A shop's checkout in Flask: POST /checkout, POST /api/buy and PUT /items/<id>
place an order; GET /__hits lists every request that reached them, DELETE
clears it. Method overrides as Flask's documentation snippet has them."""
import sys
import threading

from flask import Flask, request
from werkzeug.serving import make_server

app = Flask(__name__)
hits = []
lock = threading.Lock()


def record():
    with lock:
        hits.append("%s %s user=%s" % (request.method, request.full_path.rstrip("?"), request.headers.get("X-Waitroom-User")))
    return "ORDER PLACED"


@app.route("/checkout", methods=["POST"])
def checkout():
    return record()


@app.route("/api/buy", methods=["POST"])
def buy():
    return record()


@app.route("/items/<item>", methods=["PUT"])
def put_item(item):
    return record()


@app.route("/__hits", methods=["GET", "DELETE"])
def list_hits():
    with lock:
        if request.method == "DELETE":
            hits.clear()
            return ""
        return "".join(h + "\n" for h in hits)


class HTTPMethodOverrideMiddleware:
    """X-HTTP-Method-Override, from Flask's snippets."""

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
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print("PORT %d" % server.server_port, flush=True)
    server.serve_forever()
