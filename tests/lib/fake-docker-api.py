# A Unix socket that answers as the Docker API does (tests/lib/fixtures.sh):
# fake-docker-api.py SOCKET [MODE]. Every connection gets one 200 OK with
# the headers a Docker client checks; MODE (octal) is chmod'ed onto the
# socket. Stands in for a daemon the sandbox must not reach.
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
if len(sys.argv) > 2:
    os.chmod(sys.argv[1], int(sys.argv[2], 8))
s.listen(8)
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(b"HTTP/1.1 200 OK\r\nApi-Version: 1.43\r\nServer: Docker/24.0\r\nContent-Length: 2\r\n\r\nOK")
    c.close()
