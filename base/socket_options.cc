#include "ellm/base/socket_options.h"

#include <sys/socket.h>

namespace ellm {

void SetReuseAddressOnly(int fd) {
  int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

}  // namespace ellm
