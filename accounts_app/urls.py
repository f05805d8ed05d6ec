api_urlpatterns = []
