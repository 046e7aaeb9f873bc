#!/usr/bin/env python3
"""An HTTP MCP server that wants OAuth and never gets it (no dependencies beyond Python 3):
every MCP request is answered 401 with a `WWW-Authenticate: Bearer resource_metadata=…`
header, and the OAuth metadata it points to is served, so Claude Code lists the server as
`needs-auth` (measured on 2.1.332) and starts without it.

Usage: mcp_auth401.py PORTFILE
  Listens on 127.0.0.1 at a free port, writes the port to PORTFILE, serves until killed.
"""
import http.server
import json
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_port

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(401)
        self.send_header(
            "WWW-Authenticate",
            'Bearer resource_metadata="%s/.well-known/oauth-protected-resource"' % self.base(),
        )
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        b = self.base()
        if "oauth-protected-resource" in self.path:
            body = {"resource": b + "/mcp", "authorization_servers": [b]}
        elif "oauth-authorization-server" in self.path or "openid" in self.path:
            body = {
                "issuer": b,
                "authorization_endpoint": b + "/authorize",
                "token_endpoint": b + "/token",
                "registration_endpoint": b + "/register",
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
            }
        else:
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1], "w") as f:
        f.write(str(server.server_port))
    server.serve_forever()


if __name__ == "__main__":
    main()
