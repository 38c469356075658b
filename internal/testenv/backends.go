package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A real servlet container for gateway mode's tests, as Java shops run
// one, installed by scripts/test.sh from Debian packages
// (default-jdk-headless, libjetty9-java). Missing, a test skips, or fails
// under CI. (Flask, the other real backend, is Python's: testenv.Python.)

// JettyJars are the jars of Debian's libjetty9-java (and libservlet-api-java)
// a servlet on an embedded Jetty 9.4 needs.
var JettyJars = []string{"jetty9-server", "jetty9-servlet", "jetty9-http", "jetty9-io", "jetty9-util", "jetty9-security", "servlet-api"}

// Java is a JDK and the classpath of Jetty 9.4.
type Java struct {
	Javac, Java string
	// Classpath lists JettyJars from /usr/share/java.
	Classpath string
}

// Jetty returns the JDK and Jetty's jars, with Missing's rule when either
// is not installed.
func Jetty(t testing.TB) Java {
	t.Helper()
	var j Java
	var err error
	if j.Javac, err = exec.LookPath("javac"); err != nil {
		Missing(t, "javac (a JDK; scripts/test.sh installs default-jdk-headless): %v", err)
	}
	if j.Java, err = exec.LookPath("java"); err != nil {
		Missing(t, "java (scripts/test.sh installs default-jdk-headless): %v", err)
	}
	var jars []string
	for _, name := range JettyJars {
		jar := filepath.Join("/usr/share/java", name+".jar")
		if _, err := os.Stat(jar); err != nil {
			Missing(t, "%s (scripts/test.sh installs libjetty9-java): %v", jar, err)
		}
		jars = append(jars, jar)
	}
	j.Classpath = strings.Join(jars, string(os.PathListSeparator))
	return j
}
