// Socket options the front doors' listening sockets share.
#pragma once

namespace ellm {

// Sets SO_REUSEADDR on `fd`, and nothing else: a restarted server binds at
// once past TIME_WAIT, while a second one on a port in use still fails.
// (cpp-httplib's default also sets SO_REUSEPORT, with which the second
// server would bind too and take half the requests.) Pass it to
// httplib::Server::set_socket_options.
void SetReuseAddressOnly(int fd);

}  // namespace ellm
