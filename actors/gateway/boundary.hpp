#pragma once
// The boundary of one connection: every completion handler a session hands
// to Asio goes through guarded(), so whatever it throws ends that session's
// work through session->fail(cause) (logged; the request ends with a 500 or
// an error frame) and never reaches io_context::run(), where it would end
// every connection of the server.
#include <exception>
#include <memory>
#include <utility>

namespace hive::gateway {

// The handler may use the session's `this`: the wrapper holds the session.
template <class Session, class Handler>
auto guarded(std::shared_ptr<Session> session, Handler handler) {
  return [session = std::move(session), handler = std::move(handler)](auto&&... args) mutable {
    try {
      handler(std::forward<decltype(args)>(args)...);
    } catch (const std::exception& e) {
      session->fail(e.what());
    } catch (...) {
      session->fail("an exception of unknown type");
    }
  };
}

}  // namespace hive::gateway
