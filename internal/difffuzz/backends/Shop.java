import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import javax.servlet.DispatcherType;
import javax.servlet.Filter;
import javax.servlet.FilterChain;
import javax.servlet.ServletException;
import javax.servlet.ServletRequest;
import javax.servlet.ServletResponse;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletRequestWrapper;
import javax.servlet.http.HttpServletResponse;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

// The differential fuzzer's servlet shop on an embedded Jetty 9.4: one
// servlet per protected route, mapped as a servlet app maps them, Spring's
// hidden-method filter in front, request bodies inflated by GzipHandler.
// A protected handler answers "PROTECTED <route>" and records
// "<X-Fuzz-Id> <method> <route>" (and " user=<X-Waitroom-User>" when the
// gateway said who); everything else answers
// "OPEN <method> <path>". GET /__hits lists the records, DELETE clears them.
public class Shop {
	static final List<String> hits = new ArrayList<>();

	// What Spring's HiddenHttpMethodFilter does: a POST whose _method
	// parameter (query or urlencoded body, as getParameter reads them) is
	// PUT, DELETE or PATCH in any case goes on as that method.
	public static class HiddenHttpMethodFilter implements Filter {
		static final List<String> ALLOWED = Arrays.asList("PUT", "DELETE", "PATCH");

		@Override
		public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
				throws IOException, ServletException {
			HttpServletRequest request = (HttpServletRequest) req;
			if ("POST".equals(request.getMethod())) {
				String p = request.getParameter("_method");
				if (p != null && !p.isEmpty()) {
					String method = p.toUpperCase(Locale.ENGLISH);
					if (ALLOWED.contains(method)) {
						request = new HttpServletRequestWrapper(request) {
							@Override
							public String getMethod() {
								return method;
							}
						};
					}
				}
			}
			chain.doFilter(request, res);
		}
	}

	// A protected route: method on the servlet's mapping, and for a
	// prefix mapping (/items/*) a path info the regex matches in full.
	// service() rather than doPost and friends, so every other method
	// reaches open() instead of HttpServlet's 405.
	public static class Route extends HttpServlet {
		final String method, route;
		final Pattern pathInfo; // null: an exact mapping

		Route(String method, String route, String pathInfo) {
			this.method = method;
			this.route = method + " " + route;
			this.pathInfo = pathInfo == null ? null : Pattern.compile(pathInfo);
		}

		@Override
		protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
			String m = req.getMethod();
			String info = req.getPathInfo();
			boolean onPath = pathInfo == null || (info != null && pathInfo.matcher(info).matches());
			// HttpServlet.service answers HEAD with doGet: a GET route does too.
			boolean onMethod = m.equals(method) || (m.equals("HEAD") && method.equals("GET"));
			if (!onPath || !onMethod) {
				open(req, res);
				return;
			}
			String id = req.getHeader("X-Fuzz-Id");
			synchronized (hits) {
				String user = req.getHeader("X-Waitroom-User");
				hits.add((id == null ? "-" : id) + " " + m + " " + route + (user == null ? "" : " user=" + user));
			}
			reply(res, "PROTECTED " + route);
		}
	}

	// The default servlet (mapped at /): everything no route claims.
	public static class Open extends HttpServlet {
		@Override
		protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
			open(req, res);
		}
	}

	public static class Hits extends HttpServlet {
		@Override
		protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
			StringBuilder b = new StringBuilder();
			synchronized (hits) {
				for (String h : hits) {
					b.append(h).append('\n');
				}
			}
			reply(res, b.toString());
		}

		@Override
		protected void doDelete(HttpServletRequest req, HttpServletResponse res) {
			synchronized (hits) {
				hits.clear();
			}
		}
	}

	// The path as the servlet container routed it: decoded and normalised,
	// path parameters (;x=y) removed.
	static void open(HttpServletRequest req, HttpServletResponse res) throws IOException {
		String info = req.getPathInfo();
		reply(res, "OPEN " + req.getMethod() + " " + req.getServletPath() + (info == null ? "" : info));
	}

	static void reply(HttpServletResponse res, String body) throws IOException {
		res.setContentType("text/plain; charset=utf-8");
		res.getWriter().print(body);
	}

	public static void main(String[] args) throws Exception {
		Server server = new Server(new InetSocketAddress("127.0.0.1", 0));
		ServletContextHandler ctx = new ServletContextHandler();
		ctx.addFilter(new FilterHolder(new HiddenHttpMethodFilter()), "/*", EnumSet.of(DispatcherType.REQUEST));
		// Exact mappings win over prefix ones, so /__hits is never a route's.
		ctx.addServlet(new ServletHolder(new Hits()), "/__hits");
		ctx.addServlet(new ServletHolder(new Route("POST", "/checkout", null)), "/checkout");
		ctx.addServlet(new ServletHolder(new Route("POST", "/api/buy", null)), "/api/buy");
		ctx.addServlet(new ServletHolder(new Route("PUT", "/items/{id}", "/[^/]+")), "/items/*");
		ctx.addServlet(new ServletHolder(new Route("POST", "/orders/{id}/pay", "/[^/]+/pay")), "/orders/*");
		ctx.addServlet(new ServletHolder(new Route("GET", "/drops/{id}/buy", "/[^/]+/buy")), "/drops/*");
		ctx.addServlet(new ServletHolder(new Open()), "/");
		// Jetty's GzipHandler with inflation on: a Content-Encoding: gzip
		// body reaches getParameter (and so the filter) inflated.
		GzipHandler gzip = new GzipHandler();
		gzip.setInflateBufferSize(8192);
		gzip.setHandler(ctx);
		server.setHandler(gzip);
		server.start();
		System.out.println("PORT " + ((ServerConnector) server.getConnectors()[0]).getLocalPort());
		server.join();
	}
}
