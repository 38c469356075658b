package apptest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// DeployedNginxConf is the shipped deploy/nginx.conf (read from the module's
// root, found upward from the working directory) changed only where a
// machine of its own must: it listens on addr, sends to upstreams
// (host:port) instead of compose's waitroom-1 and waitroom-2, keeps its
// pid, logs, temp files and cache under dir, logs no access, and runs one
// worker per core. Everything that makes it a cache stays as shipped.
func DeployedNginxConf(dir, addr string, upstreams []string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "nginx.conf"))
	if err != nil {
		return "", err
	}
	text := string(raw)
	servers := ""
	for _, u := range upstreams {
		servers += "    server " + u + ";\n"
	}
	for _, edit := range []struct{ old, new string }{
		{"  upstream waitroom {\n", "  upstream waitroom {\n" + servers},
		{"listen 8080;", "listen " + addr + ";"},
		{"/var/cache/nginx/waitroom-front", filepath.Join(dir, "front")},
		{"events {}", fmt.Sprintf("worker_processes auto;\npid %[1]s/nginx.pid;\nerror_log %[1]s/error.log warn;\nevents { worker_connections 4096; }", dir)},
		{"http {", fmt.Sprintf("http {\n  access_log off;\n  client_body_temp_path %[1]s/body;\n  proxy_temp_path %[1]s/proxy;\n"+
			"  fastcgi_temp_path %[1]s/fastcgi;\n  uwsgi_temp_path %[1]s/uwsgi;\n  scgi_temp_path %[1]s/scgi;", dir)},
	} {
		if !strings.Contains(text, edit.old) {
			return "", fmt.Errorf("deploy/nginx.conf: no %q to change (the test's edits need updating)", edit.old)
		}
		text = strings.Replace(text, edit.old, edit.new, 1)
	}
	return composeServers.ReplaceAllString(text, ""), nil
}

// composeServers are deploy/nginx.conf's upstream servers, compose's
// service names.
var composeServers = regexp.MustCompile(`(?m)^    server waitroom-\d:8080.*\n`)

// moduleRoot is the nearest directory upward with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
