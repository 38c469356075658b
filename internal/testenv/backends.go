package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Real backends for gateway mode's tests: a servlet container and a Python
// framework, as shops run them, installed by scripts/test.sh from Debian
// packages (default-jdk-headless, libjetty9-java, python3-flask). Missing,
// a test skips, or fails under CI.

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

// SystemPython is Debian's own Python, whose packages (python3-flask) a
// pyenv or venv python3 earlier on PATH would not see.
const SystemPython = "/usr/bin/python3"

// Flask returns SystemPython, with Missing's rule when it cannot import
// flask.
func Flask(t testing.TB) string {
	t.Helper()
	if out, err := exec.Command(SystemPython, "-c", "import flask").CombinedOutput(); err != nil {
		Missing(t, "Flask for %s (scripts/test.sh installs python3-flask): %v: %s", SystemPython, err, out)
	}
	return SystemPython
}
