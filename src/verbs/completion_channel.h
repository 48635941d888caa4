// Completion channels: ibv_comp_channel.fd is an epoll set holding the notification fd
// of every CQ created on the channel, so programs can poll() it and
// ibv_get_cq_event() can tell which CQ fired.
#pragma once

#include "verbs/objects.h"

namespace mroce::verbs {

// Adds a CQ's notification fd to its channel (if any); false with errno on failure.
bool attach_to_channel(Cq* cq);
void detach_from_channel(Cq* cq);

}  // namespace mroce::verbs
