import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.ServletContextHandler;

// A shop's checkout as a servlet: POST /checkout and POST /api/buy place an
// order; GET /__hits lists every request that reached them, DELETE clears it.
public class Shop {
	static final List<String> hits = new ArrayList<>();

	public static class Order extends HttpServlet {
		@Override
		protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
			synchronized (hits) {
				hits.add(req.getMethod() + " " + req.getRequestURI() + " servletPath=" + req.getServletPath()
						+ " user=" + req.getHeader("X-Waitroom-User"));
			}
			res.setContentType("text/plain");
			res.getWriter().print("ORDER PLACED");
		}
	}

	public static class Hits extends HttpServlet {
		@Override
		protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
			res.setContentType("text/plain");
			synchronized (hits) {
				for (String h : hits) {
					res.getWriter().println(h);
				}
			}
		}

		@Override
		protected void doDelete(HttpServletRequest req, HttpServletResponse res) {
			synchronized (hits) {
				hits.clear();
			}
		}
	}

	public static void main(String[] args) throws Exception {
		Server server = new Server(new InetSocketAddress("127.0.0.1", 0));
		ServletContextHandler ctx = new ServletContextHandler();
		ctx.addServlet(Order.class, "/checkout");
		ctx.addServlet(Order.class, "/api/buy");
		ctx.addServlet(Hits.class, "/__hits");
		server.setHandler(ctx);
		server.start();
		System.out.println("PORT " + ((ServerConnector) server.getConnectors()[0]).getLocalPort());
		server.join();
	}
}
